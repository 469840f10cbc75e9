export type {
  Adjusted,
  Algorithm,
  AlgorithmKind,
  LeaseModel,
  Outcome,
  RuleKey,
  RuleOptions,
} from './algorithms/algorithm.js';
export type { WindowOptions } from './algorithms/window-rule.js';
export { EPSILON, TOLERANCE_MS } from './algorithms/algorithm.js';
export { fixedWindow } from './algorithms/fixed-window.js';
export type { FixedWindowOptions, FixedWindowState } from './algorithms/fixed-window.js';
export { slidingWindowLog } from './algorithms/sliding-window-log.js';
export type { SlidingWindowLogOptions, SlidingWindowLogState } from './algorithms/sliding-window-log.js';
export { slidingWindowCounter } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowCounterOptions, SlidingWindowCounterState } from './algorithms/sliding-window-counter.js';
export { tokenBucket } from './algorithms/token-bucket.js';
export type { TokenBucketOptions, TokenBucketState } from './algorithms/token-bucket.js';
export { leakyBucket } from './algorithms/leaky-bucket.js';
export type {
  LeakyBucketOptions,
  LeakyBucketState,
  LeakyPoliceState,
  LeakyShapeState,
} from './algorithms/leaky-bucket.js';
export { gcra } from './algorithms/gcra.js';
export type { GcraOptions, GcraState } from './algorithms/gcra.js';
export { smoothBursty, smoothWarmingUp } from './algorithms/smooth.js';
export type { SmoothBurstyOptions, SmoothState, SmoothWarmingUpOptions } from './algorithms/smooth.js';
export { ManualClock, systemClock } from './clock.js';
export type { Clock } from './clock.js';
export type { Decision, RuleStatus } from './decision.js';
export { RateLimitedError, SluiceError, SluiceRangeError, SluiceTypeError } from './errors.js';
export type { SluiceErrorCode } from './errors.js';
export { createLimiter } from './limiter.js';
export type {
  AcquireOptions,
  CommonLimiterOptions,
  Limiter,
  LimiterOptions,
  PeekOptions,
  PenalizeOptions,
  PlanOption,
  PlansLimiterOptions,
  RefundOptions,
  RulesLimiterOptions,
  TryAcquireOptions,
} from './limiter.js';
export type { PlanResolver } from './plans.js';
export { MemoryStore, memoryStore } from './memory-store.js';
export { concurrencyLimiter } from './concurrency/concurrency-limiter.js';
export type {
  ConcurrencyAcquireOptions,
  ConcurrencyLimiter,
  ConcurrencyLimiterOptions,
  Slot,
} from './concurrency/concurrency-limiter.js';
export type { ConcurrencyStore, SemaphoreBinding, SemaphoreSpec, SlotAttempt } from './concurrency/store.js';
export type { MemoryStoreOptions } from './memory-store.js';
export type { Rules } from './policy.js';
export { limiterStatuses, observeSluice } from './observe.js';
export type {
  DecisionNote,
  DecisionSource,
  LimiterStatus,
  ObservedDecision,
  SluiceObserver,
  StatusSource,
} from './observe.js';
export { RateLimiter } from './rate-limiter.js';
export { WARNINGS, silenceWarnings } from './warnings.js';
export type { SluiceWarningCode } from './warnings.js';
export type { RateLimiterOptions } from './rate-limiter.js';
export type { BoundStore, GrantSource, RuleSet, Store, StoreCapabilities } from './store.js';
/** The longest period a rule may span (about 317 years). */
export { MAX_PERIOD_MS } from './validate.js';
