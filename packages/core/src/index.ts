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
export { CARRY_MODES, carryState } from './algorithms/carry.js';
export type { CarryMode } from './algorithms/carry.js';
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
export { ManualClock, systemClock } from './foundation/clock.js';
export type { Clock } from './foundation/clock.js';
export type { Decision, RuleStatus } from './foundation/decision.js';
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
} from './engine/limiter.js';
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
} from './engine/observe.js';
export { RateLimiter } from './guava/rate-limiter.js';
export { WARNINGS, silenceWarnings } from './foundation/warnings.js';
export type { SluiceWarningCode } from './foundation/warnings.js';
export type { RateLimiterOptions } from './guava/rate-limiter.js';
export type {
  BoundStore,
  GrantSource,
  LimiterConfiguration,
  Permits,
  RuleCosts,
  RuleSet,
  SharedRules,
  Store,
  StoreCapabilities,
} from './engine/store.js';
/** The longest period a rule may span (about 317 years). */
export { MAX_PERIOD_MS } from './foundation/validate.js';
export { DEFAULT_MAX_KEY_LENGTH, DEFAULT_PREFIX } from './foundation/validate.js';
