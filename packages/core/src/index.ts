export type { Algorithm, AlgorithmKind, Outcome, RuleKey, RuleOptions } from './algorithms/algorithm.js';
export { identityOf } from './algorithms/rule-name.js';
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
export type { AcquireOptions, Limiter, LimiterOptions, TryAcquireOptions } from './limiter.js';
export { MemoryStore, memoryStore } from './memory-store.js';
export type { MemoryStoreOptions } from './memory-store.js';
export { decidePolicy, mergePolicy, normalizeRules, ruleDecision } from './policy.js';
export type { PolicyOutcome, RuleVerdict, Rules } from './policy.js';
export { RateLimiter } from './rate-limiter.js';
export type { RateLimiterOptions } from './rate-limiter.js';
export type { BoundStore, RuleSet, Store } from './store.js';
export { PrefixGuard } from './prefix-guard.js';
/** For store implementations: a rule scaled to a node's share, a growable bounded key cache, isolated user callbacks. */
export { scaledRule } from './algorithms/scaled-rule.js';
export { keyCache } from './key-cache.js';
export { callSafely, emitSafely, hostWarning, reportCallbackError } from './callbacks.js';
export type { CallbackEmitter } from './callbacks.js';
export { MAX_TIMER_MS, timerSleep } from './clock.js';
export { MAX_PERIOD_MS } from './validate.js';
/** Option validators for store implementations: typed errors that name the option and the bad value. */
export { describe as describeValue, optionalClock, optionsObject, positiveFinite, positiveInteger, timerDuration } from './validate.js';
