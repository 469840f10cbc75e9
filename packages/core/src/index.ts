// Rules: each algorithm's factory and options. A rule is an Algorithm; a limiter takes one or several (Rules).
export type { Algorithm, AlgorithmKind } from './algorithms/algorithm.js';
export { fixedWindow } from './algorithms/fixed-window.js';
export type { FixedWindowOptions } from './algorithms/fixed-window.js';
export { calendarWindow } from './algorithms/calendar-window.js';
export type { CalendarWindowOptions } from './algorithms/calendar-window.js';
export { slidingWindowLog } from './algorithms/sliding-window-log.js';
export type { SlidingWindowLogOptions } from './algorithms/sliding-window-log.js';
export { slidingWindowCounter } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowCounterOptions } from './algorithms/sliding-window-counter.js';
export { tokenBucket } from './algorithms/token-bucket.js';
export type { TokenBucketOptions } from './algorithms/token-bucket.js';
export { leakyBucket } from './algorithms/leaky-bucket.js';
export type { LeakyBucketOptions } from './algorithms/leaky-bucket.js';
export { gcra } from './algorithms/gcra.js';
export type { GcraOptions } from './algorithms/gcra.js';
export { smoothBursty, smoothWarmingUp } from './algorithms/smooth.js';
export type { SmoothBurstyOptions, SmoothWarmingUpOptions } from './algorithms/smooth.js';
export type { Rules } from './engine/policy.js';
export type { CarryMode } from './algorithms/carry.js';
// Time: the clock a limiter reads, and one a test moves by hand.
export { ManualClock, systemClock } from './foundation/clock.js';
export type { Clock } from './foundation/clock.js';
// Errors and warnings.
export { RateLimitedError, SluiceError, SluiceRangeError, SluiceTypeError } from './foundation/errors.js';
export type { SluiceErrorCode } from './foundation/errors.js';
export { silenceWarnings } from './foundation/warnings.js';
export type { SluiceWarningCode } from './foundation/warnings.js';
// The limiter: its factory, its options, its calls' options and what they answer.
export { createLimiter } from './engine/limiter.js';
export type { LimiterOptions } from './engine/limiter-options.js';
export type { Decision, RuleStatus } from './foundation/decision.js';
export type {
  AcquireOptions,
  Limiter,
  OverridesOptions,
  OverridesPage,
  PeekOptions,
  PenalizeOptions,
  ReconfigureOptions,
  RefundOptions,
  TryAcquireOptions,
} from './engine/limiter-types.js';
export type { LimiterConfiguration, RulePermits, Store } from './engine/store.js';
export type { LimitedKey, TopLimitedOptions } from './engine/limited-keys.js';
export type { ListEntryOptions } from './engine/access-list.js';
export type { AccessEntry } from './engine/access-list-store.js';
// The in-process store (a limiter's default).
export { MemoryStore, memoryStore } from './engine/memory-store.js';
export type { MemoryStoreOptions } from './engine/memory-store.js';
// Concurrency: at most N at once per key.
export { concurrencyLimiter } from './concurrency/concurrency-limiter.js';
export type {
  ConcurrencyAcquireOptions,
  ConcurrencyLimiter,
  ConcurrencyLimiterOptions,
  Slot,
} from './concurrency/concurrency-limiter.js';
// Throttling outgoing calls: a queue that waits its turn.
export { throttle } from './throttle/throttle.js';
export type { Throttle, ThrottleRunOptions } from './throttle/throttle.js';
export type { ThrottleTicket } from './throttle/ticket.js';
export type { ThrottleFetchOptions } from './throttle/throttle-fetch.js';
export type { ThrottleOptions } from './throttle/throttle-options.js';
// Guava's RateLimiter, for code ported from Java.
export { RateLimiter } from './guava/rate-limiter.js';
export type { RateLimiterOptions } from './guava/rate-limiter.js';
// Observers: every decision and throttle event, and each limiter's standing.
export { limiterStatuses, observeSluice } from './engine/observe.js';
export type { LimiterStatus, ObservedDecision, SluiceObserver, ThrottleEvent } from './engine/observe.js';
// The permits an acquire asks for: a count, or one per rule (RulePermits).
export type { Permits } from './engine/store.js';
