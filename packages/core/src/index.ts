export type {
  Adjusted,
  Algorithm,
  AlgorithmKind,
  LeaseModel,
  LeaseWindow,
  Outcome,
  RuleScope,
  RuleOptions,
} from './algorithms/algorithm.js';
export type { WindowOptions } from './algorithms/window-rule.js';
export { EPSILON, TOLERANCE_MS } from './algorithms/algorithm.js';
export { CARRY_MODES, carryState } from './algorithms/carry.js';
export type { CarryMode } from './algorithms/carry.js';
export { fixedWindow } from './algorithms/fixed-window.js';
export type { FixedWindowOptions, FixedWindowState } from './algorithms/fixed-window.js';
export { calendarWindow } from './algorithms/calendar-window.js';
export type { CalendarWindowOptions, CalendarWindowState } from './algorithms/calendar-window.js';
export type { CalendarPeriod } from './algorithms/calendar/calendar-bounds.js';
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
export { ManualClock, systemClock } from './foundation/clock.js';
export type { Clock } from './foundation/clock.js';
export type { AccessMatch, Decision, RuleStatus } from './foundation/decision.js';
export { FALLBACK_RETRY_MS } from './foundation/decision.js';
export { RateLimitedError, SluiceError, SluiceRangeError, SluiceTypeError } from './foundation/errors.js';
export type { SluiceErrorCode } from './foundation/errors.js';
export { createLimiter } from './engine/limiter.js';
export type {
  AcquireOptions,
  Limiter,
  Override,
  OverridesOptions,
  OverridesPage,
  PeekOptions,
  PenalizeOptions,
  PlanOption,
  ReconfigureOptions,
  RefundOptions,
  TryAcquireOptions,
} from './engine/limiter-types.js';
export type {
  CommonLimiterOptions,
  LimiterOptions,
  PlansLimiterOptions,
  RulesLimiterOptions,
} from './engine/limiter-options.js';
export { DEFAULT_RETRY_JITTER_MS } from './engine/limiter-options.js';
export type { PlanResolver } from './engine/plans.js';
export { DEFAULT_MAX_KEYS, MemoryStore, memoryStore } from './engine/memory-store.js';
export { DEFAULT_LEASE_MS, concurrencyLimiter } from './concurrency/concurrency-limiter.js';
export type {
  ConcurrencyAcquireOptions,
  ConcurrencyLimiter,
  ConcurrencyLimiterOptions,
  Slot,
} from './concurrency/concurrency-limiter.js';
export type { ConcurrencyStore, SemaphoreBinding, SemaphoreSpec, SlotAttempt } from './engine/semaphore-store.js';
export type { MemoryStoreOptions } from './engine/memory-store.js';
export type { Rules } from './engine/policy.js';
export { limiterStatuses, observeSluice } from './engine/observe.js';
export type {
  DecisionNote,
  DecisionSource,
  LimiterStatus,
  ObservedDecision,
  SluiceObserver,
  StatusSource,
  ThrottleEvent,
  ThrottleLeaveReason,
} from './engine/observe.js';
export { throttle } from './throttle/throttle.js';
export {
  DEFAULT_FLUSH_MS,
  DEFAULT_LIMITED_KEYS,
  DEFAULT_NEAR_LIMIT,
  DEFAULT_TOP_MINUTES,
} from './engine/limited-keys.js';
export type { LimitedKey, LimitedKeysOptions, TopLimitedOptions } from './engine/limited-keys.js';
export { MAX_BOARD_MINUTES, byMostLimited, sumRows } from './engine/limited-keys-board.js';
export type { BoardRow, LimitedKeysBinding, LimitedKeysStore } from './engine/limited-keys-board.js';
export { DEFAULT_ACCESS_REFRESH_MS, MAX_ENTRIES_PER_CALL } from './engine/access-list.js';
export type { AccessListOptions, ListEntryOptions } from './engine/access-list.js';
export { MAX_ACCESS_ENTRIES } from './engine/access-list-store.js';
export type {
  AccessEntry,
  AccessListBinding,
  AccessListName,
  AccessListStore,
  NewAccessEntry,
  StoredAccessList,
} from './engine/access-list-store.js';
export type { Throttle, ThrottleRunOptions } from './throttle/throttle.js';
export type { ThrottleTicket } from './throttle/ticket.js';
export { MAX_SETTLE_FACTOR } from './throttle/ticket.js';
export type { ThrottleFetchInit, ThrottleFetchOptions } from './throttle/throttle-fetch.js';
export {
  DEFAULT_FETCH_RETRIES,
  DEFAULT_MAX_PAUSE_MS,
  DEFAULT_MAX_QUEUE,
  DEFAULT_PAUSE_MS,
  DEFAULT_THROTTLE_KEY,
  DEFAULT_TURN_LEASE_MS,
} from './throttle/throttle-options.js';
export type { FetchFunction, ThrottleOptions, ThrottleOrder } from './throttle/throttle-options.js';
export { retryDelayMs } from './throttle/retry-after.js';
export type { PauseBinding, PauseStore } from './engine/pause-store.js';
export { RateLimiter } from './guava/rate-limiter.js';
export { WARNINGS, silenceWarnings } from './foundation/warnings.js';
export type { SluiceWarningCode } from './foundation/warnings.js';
export type { RateLimiterOptions } from './guava/rate-limiter.js';
export type {
  BoundStore,
  GrantSource,
  LimiterConfiguration,
  Permits,
  RulePermits,
  RuleSet,
  SharedRules,
  Store,
  StoreCapabilities,
} from './engine/store.js';
/** The longest period a rule may span (about 317 years). */
export { MAX_PERIOD_MS } from './foundation/validate.js';
export { DEFAULT_MAX_KEY_LENGTH, DEFAULT_PREFIX } from './foundation/validate.js';
