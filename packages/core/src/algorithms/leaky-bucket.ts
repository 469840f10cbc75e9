import { SluiceRangeError, inCall } from '../foundation/errors.js';
import { knownOptions, type OptionNames } from '../foundation/options.js';
import { describe, positiveFinite, positiveInteger, representablePeriod } from '../foundation/validate.js';
import {
  type Adjusted,
  type Algorithm,
  type Outcome,
  type RuleOptions,
  EPSILON,
  TOLERANCE_MS,
  neverFits,
  outcome,
  wholePermits,
  shareOf,
} from './algorithm.js';
import { RULE_OPTIONS, commonRuleOptions, ownOptions } from './rule-common.js';
import { defaultRuleName, ratePart } from './rule-name.js';

/** Options of leakyBucket: a bucket of `capacity` that leaks at a steady rate. */
export interface LeakyBucketOptions extends RuleOptions {
  /** What the bucket holds: permits of water (police) or of queue (shape). An integer >= 1. */
  capacity: number;
  /** Permits that leave per second (a finite number > 0). */
  leakPerSecond: number;
  /**
   * `'police'` refuses what would overflow the bucket; `'shape'` queues requests and tells each how long
   * to wait so that they leave at exactly `leakPerSecond`.
   * @default 'police'
   */
  mode?: 'police' | 'shape';
}

const LEAKY_BUCKET_OPTIONS: OptionNames<LeakyBucketOptions> = {
  ...RULE_OPTIONS,
  capacity: true,
  leakPerSecond: true,
  mode: true,
};

/** Police mode: the water level at `updatedAt`. */
export interface LeakyPoliceState {
  readonly level: number;
  readonly updatedAt: number;
}

/**
 * Shape mode: how much queue (in ms) was ahead at the last decision time `at`. Kept as an offset: adding
 * each request's time to an epoch-scale "drains at" would round on every grant and the error would pile up
 * while the queue stays busy.
 */
export interface LeakyShapeState {
  readonly queuedMs: number;
  readonly at: number;
}

/** A leaky bucket's state, in police or shape mode. */
export type LeakyBucketState = LeakyPoliceState | LeakyShapeState;

/**
 * A bucket that leaks at a constant rate. Police mode admits a request while the water it adds fits;
 * shape mode admits it into a queue of `capacity` permits and returns the delay (`waitMs`) after which it
 * leaves, so the output never runs faster than `leakPerSecond`. Shape mode grants only waits up to the
 * caller's `maxWaitMs`.
 *
 * @example
 * const smooth = leakyBucket({ capacity: 20, leakPerSecond: 5, mode: 'shape' })
 * await limiter.tryAcquire('jobs', { maxWaitMs: 4_000 }) // resolves when the request leaves the bucket
 */
export function leakyBucket(options: LeakyBucketOptions): Algorithm<LeakyBucketState> {
  return inCall('leakyBucket', () => {
    knownOptions('leakyBucket options', LEAKY_BUCKET_OPTIONS, options, true);
    const capacity = positiveInteger('capacity', options.capacity);
    const leakPerSecond = positiveFinite('leakPerSecond', options.leakPerSecond);
    const mode = options.mode ?? 'police';
    if (mode !== 'police' && mode !== 'shape') {
      throw new SluiceRangeError('mode', mode, `mode must be 'police' or 'shape', got ${describe(mode)}`);
    }
    representablePeriod(
      'leakPerSecond',
      leakPerSecond,
      (capacity * 1000) / leakPerSecond,
      'draining a full bucket take',
    );
    const common = commonRuleOptions(
      options,
      defaultRuleName(mode === 'police' ? 'lb' : 'lbs', [capacity, ratePart(leakPerSecond)]),
      mode === 'police' ? 'lb' : 'lbs',
    );
    const { name, scope } = common;
    const msPerPermit = 1000 / leakPerSecond;
    const tolerance = EPSILON + (TOLERANCE_MS * leakPerSecond) / 1000;

    /** Police mode: the water at `nowMs` (time never goes back past the stored update). One object per rule: no allocation. */
    const water = { level: 0, now: 0 };
    function drained(state: LeakyPoliceState | undefined, nowMs: number): typeof water {
      water.level = 0;
      water.now = nowMs;
      if (state !== undefined) {
        water.now = Math.max(state.updatedAt, nowMs);
        water.level = Math.max(0, state.level - ((water.now - state.updatedAt) * leakPerSecond) / 1000);
      }
      return water;
    }

    function police(state: LeakyPoliceState | undefined, nowMs: number, permits: number): Outcome<LeakyPoliceState> {
      const { level, now } = drained(state, nowMs);
      const emptyAfterMs = (level * 1000) / leakPerSecond;
      if (permits > capacity) return neverFits(state, wholePermits(capacity - level), emptyAfterMs, emptyAfterMs);
      if (level + permits <= capacity + tolerance) {
        const next = level + permits;
        const ttlMs = (next * 1000) / leakPerSecond;
        return outcome(true, { level: next, updatedAt: now }, wholePermits(capacity - next), 0, ttlMs, 0, ttlMs);
      }
      const retryAfterMs = ((level + permits - capacity) * 1000) / leakPerSecond + (now - nowMs);
      return outcome(false, state, wholePermits(capacity - level), retryAfterMs, emptyAfterMs, 0, emptyAfterMs);
    }

    /** Shape mode: the queue ahead at `nowMs`, in ms. A clock that steps back sees more queue ahead, never less. */
    const queueAhead = (state: LeakyShapeState | undefined, nowMs: number): number =>
      state === undefined ? 0 : Math.max(0, state.queuedMs - (nowMs - state.at));

    function shape(
      state: LeakyShapeState | undefined,
      nowMs: number,
      permits: number,
      maxWaitMs: number,
    ): Outcome<LeakyShapeState> {
      const queuedMs = queueAhead(state, nowMs);
      const queued = (queuedMs * leakPerSecond) / 1000;
      if (permits > capacity) return neverFits(state, wholePermits(capacity - queued), queuedMs, queuedMs);
      // The queue (in time) may hold capacity permits, this request included.
      const roomMs = (capacity - permits) * msPerPermit;
      if (queuedMs <= roomMs + TOLERANCE_MS && queuedMs <= maxWaitMs + TOLERANCE_MS) {
        const ttlMs = queuedMs + permits * msPerPermit;
        const remaining = wholePermits(capacity - queued - permits);
        return outcome(
          true,
          { queuedMs: ttlMs, at: nowMs },
          remaining,
          0,
          ttlMs,
          Math.min(queuedMs, Math.max(maxWaitMs, 0)),
          ttlMs,
        );
      }
      const retryAfterMs = Math.max(queuedMs - maxWaitMs, queuedMs - roomMs);
      return outcome(false, state, wholePermits(capacity - queued), retryAfterMs, queuedMs, 0, queuedMs);
    }

    // Water poured back out (police) or queue given back (shape), never below empty: a leak is linear, so this
    // undoes a grant whenever it was made. A penalty pours in past the capacity, denying until it drains.
    function policeAdjusted(
      state: LeakyPoliceState | undefined,
      nowMs: number,
      permits: number,
    ): Adjusted<LeakyPoliceState> {
      const { level, now } = drained(state, nowMs);
      const next = Math.max(0, level + permits);
      return { state: { level: next, updatedAt: now }, ttlMs: (next * 1000) / leakPerSecond };
    }
    function shapeAdjusted(
      state: LeakyShapeState | undefined,
      nowMs: number,
      permits: number,
    ): Adjusted<LeakyShapeState> {
      const queuedMs = Math.max(0, queueAhead(state, nowMs) + permits * msPerPermit);
      return { state: { queuedMs, at: nowMs }, ttlMs: queuedMs };
    }
    const adjust = (mode === 'police' ? policeAdjusted : shapeAdjusted) as (
      state: LeakyBucketState | undefined,
      nowMs: number,
      permits: number,
    ) => Adjusted<LeakyBucketState>;

    return {
      kind: 'leakyBucket',
      name,
      scope,
      limit: capacity,
      windowMs: Math.max(1, Math.ceil(capacity * msPerPermit)),
      reserves: mode === 'shape',
      stableDenials: mode === 'police',
      params: { capacity, leakPerSecond, mode },
      wireParams: [capacity, leakPerSecond, mode],
      planName: common.planName,
      stateFormat: `leakyBucket/${mode}`,
      refundable: true,
      blockMs: common.blockMs,
      burst: capacity,
      ratePerSecond: leakPerSecond,
      lease: undefined,
      share: (fraction) =>
        leakyBucket({
          ...ownOptions(common),
          capacity: shareOf(capacity, fraction),
          leakPerSecond: leakPerSecond * fraction,
          mode,
        }),
      // Police mode's water scales with the share; shape mode's queue is time ahead, which the share's rate scales.
      rescale: (state, ratio) => ('level' in state ? { ...state, level: state.level * ratio } : state),
      // The water in the bucket, or the permits queued ahead.
      usedAt: (state, nowMs) =>
        mode === 'police'
          ? drained(state as LeakyPoliceState | undefined, nowMs).level
          : (queueAhead(state as LeakyShapeState | undefined, nowMs) * leakPerSecond) / 1000,
      consume: (mode === 'police' ? police : shape) as Algorithm<LeakyBucketState>['consume'],
      refund: (state, nowMs, permits) => (state === undefined ? { state, ttlMs: 0 } : adjust(state, nowMs, -permits)),
      penalize: (state, nowMs, permits) => adjust(state, nowMs, permits),
    };
  });
}
