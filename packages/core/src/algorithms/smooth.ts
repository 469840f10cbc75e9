import { SluiceRangeError, inCall } from '../foundation/errors.js';
import { knownOptions, type OptionNames } from '../foundation/options.js';
import { nonNegativeFinite, positiveFinite, representablePeriod } from '../foundation/validate.js';
import {
  type Adjusted,
  type Algorithm,
  type Outcome,
  type RuleOptions,
  TOLERANCE_MS,
  outcome,
  wholePermits,
} from './algorithm.js';
import { type CommonRule, RULE_OPTIONS, commonRuleOptions, ownOptions } from './rule-common.js';
import { defaultRuleName, periodPart, ratePart } from './rule-name.js';
import {
  type SmoothShape,
  burstyShape,
  rescaleStoredPermits,
  reserveEarliestAvailable,
  resyncedPermits,
  warmingUpShape,
} from './smooth-rate.js';

/** Options of smoothBursty: Guava's SmoothBursty, permits spaced at a rate with up to `maxBurstSeconds` saved. */
export interface SmoothBurstyOptions extends RuleOptions {
  /** Stable rate (a finite number > 0). */
  permitsPerSecond: number;
  /**
   * Seconds of unused permits that may be saved up for a burst.
   * @default 1
   */
  maxBurstSeconds?: number;
  /**
   * Permits stored in a limiter seen for the first time (0 to the maximum burst).
   * @default 0, as Guava
   */
  initialPermits?: number;
}

const SMOOTH_BURSTY_OPTIONS: OptionNames<SmoothBurstyOptions> = {
  ...RULE_OPTIONS,
  permitsPerSecond: true,
  maxBurstSeconds: true,
  initialPermits: true,
};

/** Options of smoothWarmingUp: Guava's SmoothWarmingUp, a rate reached after a warm-up from cold. */
export interface SmoothWarmingUpOptions extends RuleOptions {
  /** Stable rate once warm (a finite number > 0). */
  permitsPerSecond: number;
  /** How long the rate takes to climb from cold to stable (a finite number > 0). */
  warmupMs: number;
  /**
   * How many times slower than stable a cold limiter starts (a finite number >= 1).
   * @default 3
   */
  coldFactor?: number;
}

const SMOOTH_WARMING_UP_OPTIONS: OptionNames<SmoothWarmingUpOptions> = {
  ...RULE_OPTIONS,
  permitsPerSecond: true,
  warmupMs: true,
  coldFactor: true,
};

/**
 * Guava's stored permits and next free ticket, the latter kept as how far it was ahead of the last decision
 * time `at` (negative: already past). Reservations keep the next free time ahead of the clock and advance it
 * on every grant; at epoch-scale times each advance would round (~0.24 us), and it would pile up.
 */
export interface SmoothState {
  readonly storedPermits: number;
  readonly aheadMs: number;
  readonly at: number;
}

function smoothAlgorithm(
  kind: 'smoothBursty' | 'smoothWarmingUp',
  { name, scope, blockMs, planName }: CommonRule,
  permitsPerSecond: number,
  shape: SmoothShape,
  initialPermits: number,
  params: Record<string, number>,
  share: (fraction: number) => Algorithm<SmoothState>,
): Algorithm<SmoothState> {
  const windowMs = Math.max(1000, 1000 / permitsPerSecond);
  const freshPermits = rescaleStoredPermits(0, 0, shape, initialPermits);
  // When stored permits reach the burst (relative to now), and how long a full limiter is kept before it is
  // forgotten.
  const fullAt = (stored: number, ahead: number) => ahead + (shape.maxPermits - stored) * shape.coolDownIntervalMs;
  const graceMs = freshPermits < shape.maxPermits ? shape.maxPermits * shape.coolDownIntervalMs : 0;

  /**
   * Guava's state at `nowMs`, on times relative to now (now = 0, next free = how far ahead it is): small
   * numbers. `fresh` when never seen or forgotten. One object per rule (decisions are synchronous).
   */
  const standing = { storedPermits: 0, ahead: 0, fresh: true };
  function standingAt(state: SmoothState | undefined, nowMs: number): typeof standing {
    // Capped at the burst: a key whose plan changed to a smaller burst keeps no more than the new one allows.
    standing.storedPermits = state === undefined ? freshPermits : Math.min(shape.maxPermits, state.storedPermits);
    standing.ahead = state === undefined ? 0 : state.aheadMs - (nowMs - state.at);
    standing.fresh = state === undefined;
    // With fewer initial permits than the burst, a key that held its full burst for one more burst period is
    // forgotten and starts again from them (decided here, so every store forgets at the same instant).
    if (
      state !== undefined &&
      freshPermits < shape.maxPermits &&
      0 >= fullAt(standing.storedPermits, standing.ahead) + graceMs
    ) {
      standing.fresh = true;
      standing.storedPermits = freshPermits;
      standing.ahead = 0;
    }
    return standing;
  }

  function consume(
    state: SmoothState | undefined,
    nowMs: number,
    permits: number,
    maxWaitMs: number,
  ): Outcome<SmoothState> {
    const { storedPermits, ahead, fresh } = standingAt(state, nowMs);
    if (fresh) state = undefined;
    // Guava's canAcquire looks only at the next free time, whatever the permits asked for.
    if (ahead - maxWaitMs > TOLERANCE_MS) {
      const stored = resyncedPermits(storedPermits, ahead, 0, shape);
      const full = fullAt(storedPermits, ahead);
      return outcome(
        false,
        state,
        wholePermits(stored),
        ahead - maxWaitMs,
        Math.max(0, full),
        0,
        Math.max(0, full + graceMs),
      );
    }
    const r = reserveEarliestAvailable(shape, storedPermits, ahead, permits, 0);
    const full = fullAt(r.storedPermits, r.nextFreeMs);
    const waitMs = Math.min(Math.max(r.momentAvailableMs, 0), maxWaitMs);
    const next = { storedPermits: r.storedPermits, aheadMs: r.nextFreeMs, at: nowMs };
    return outcome(
      true,
      next,
      wholePermits(r.storedPermits),
      0,
      Math.max(0, full),
      waitMs,
      Math.max(0, full + graceMs),
    );
  }

  // A reservation never waited: the permits are taken and the next free time moves on by what they cost.
  function penalize(state: SmoothState | undefined, nowMs: number, permits: number): Adjusted<SmoothState> {
    const { storedPermits, ahead } = standingAt(state, nowMs);
    const r = reserveEarliestAvailable(shape, storedPermits, ahead, permits, 0);
    return {
      state: { storedPermits: r.storedPermits, aheadMs: r.nextFreeMs, at: nowMs },
      ttlMs: Math.max(0, fullAt(r.storedPermits, r.nextFreeMs) + graceMs),
    };
  }

  return {
    kind,
    name,
    scope,
    limit: Math.max(1, Math.round((permitsPerSecond * windowMs) / 1000)),
    windowMs,
    reserves: true,
    stableDenials: true,
    params,
    wireParams: Object.values(params),
    planName,
    stateFormat: kind,
    // Guava's prepay: the next caller pays for this grant, which cannot be taken back.
    refundable: false,
    blockMs,
    burst: Math.max(1, shape.maxPermits),
    ratePerSecond: permitsPerSecond,
    lease: undefined,
    share,
    rescale: (state, ratio) => ({ ...state, storedPermits: state.storedPermits * ratio }),
    usedAt(state, nowMs) {
      const { storedPermits, ahead, fresh } = standingAt(state, nowMs);
      return fresh ? 0 : Math.max(1, shape.maxPermits) - resyncedPermits(storedPermits, ahead, 0, shape);
    },
    consume,
    refund() {
      throw new SluiceRangeError(
        'algorithm',
        kind,
        `rule ${JSON.stringify(name)} (${kind}) cannot refund: with Guava's prepay the next request pays for a ` +
          `grant, which cannot be taken back`,
      );
    },
    penalize,
  };
}

/**
 * Guava's SmoothBursty: permits are spread evenly at `permitsPerSecond`; up to `maxBurstSeconds` of
 * unused permits are saved for a burst. A request is granted at once when nothing is owed, and the next
 * request pays for it (prepay). It never refuses a large request: it reserves it with an honest wait.
 *
 * @example
 * const steady = smoothBursty({ permitsPerSecond: 5 })
 */
export function smoothBursty(options: SmoothBurstyOptions): Algorithm<SmoothState> {
  return inCall('smoothBursty', () => {
    knownOptions('smoothBursty options', SMOOTH_BURSTY_OPTIONS, options, true);
    const permitsPerSecond = positiveFinite('permitsPerSecond', options.permitsPerSecond);
    const maxBurstSeconds =
      options.maxBurstSeconds === undefined ? 1 : nonNegativeFinite('maxBurstSeconds', options.maxBurstSeconds);
    const shape = burstyShape(permitsPerSecond, maxBurstSeconds);
    const initialPermits =
      options.initialPermits === undefined ? 0 : nonNegativeFinite('initialPermits', options.initialPermits);
    if (initialPermits > shape.maxPermits) {
      throw new SluiceRangeError(
        'initialPermits',
        initialPermits,
        `initialPermits must be at most permitsPerSecond x maxBurstSeconds (${shape.maxPermits}), got ` +
          `${initialPermits}`,
      );
    }
    representablePeriod('permitsPerSecond', permitsPerSecond, 1000 / permitsPerSecond, 'one permit take');
    representablePeriod('maxBurstSeconds', maxBurstSeconds, maxBurstSeconds * 1000, 'the burst span');
    const parts: Array<string | number> = [ratePart(permitsPerSecond)];
    if (maxBurstSeconds !== 1) parts.push(`b${maxBurstSeconds}s`);
    if (initialPermits !== 0) parts.push(`i${initialPermits}`);
    const common = commonRuleOptions(options, defaultRuleName('sb', parts), 'sb');
    const share = (fraction: number) =>
      smoothBursty({
        ...ownOptions(common),
        permitsPerSecond: permitsPerSecond * fraction,
        maxBurstSeconds,
        initialPermits: Math.min(permitsPerSecond * fraction * maxBurstSeconds, initialPermits * fraction),
      });
    // Wire order: permitsPerSecond, maxBurstSeconds, initialPermits.
    return smoothAlgorithm(
      'smoothBursty',
      common,
      permitsPerSecond,
      shape,
      initialPermits,
      { permitsPerSecond, maxBurstSeconds, initialPermits },
      share,
    );
  });
}

/**
 * Guava's SmoothWarmingUp: starts cold (slow) and speeds up to `permitsPerSecond` over `warmupMs` of
 * steady use; goes cold again after a quiet spell as long as the warm-up.
 *
 * @example
 * const db = smoothWarmingUp({ permitsPerSecond: 100, warmupMs: 10_000 })
 */
export function smoothWarmingUp(options: SmoothWarmingUpOptions): Algorithm<SmoothState> {
  return inCall('smoothWarmingUp', () => {
    knownOptions('smoothWarmingUp options', SMOOTH_WARMING_UP_OPTIONS, options, true);
    const permitsPerSecond = positiveFinite('permitsPerSecond', options.permitsPerSecond);
    const warmupMs = positiveFinite('warmupMs', options.warmupMs);
    const coldFactor = options.coldFactor === undefined ? 3 : positiveFinite('coldFactor', options.coldFactor);
    if (coldFactor < 1)
      throw new SluiceRangeError('coldFactor', coldFactor, `coldFactor must be >= 1, got ${coldFactor}`);
    representablePeriod(
      'permitsPerSecond',
      permitsPerSecond,
      (coldFactor * 1000) / permitsPerSecond,
      'one cold permit take',
    );
    representablePeriod('warmupMs', warmupMs, warmupMs, 'a warm-up of');
    const parts: Array<string | number> = [ratePart(permitsPerSecond), `w${periodPart(warmupMs)}`];
    if (coldFactor !== 3) parts.push(`c${coldFactor}`);
    const common = commonRuleOptions(options, defaultRuleName('swu', parts), 'swu');
    const share = (fraction: number) =>
      smoothWarmingUp({ ...ownOptions(common), permitsPerSecond: permitsPerSecond * fraction, warmupMs, coldFactor });
    // Wire order: permitsPerSecond, warmupMs, coldFactor.
    return smoothAlgorithm(
      'smoothWarmingUp',
      common,
      permitsPerSecond,
      warmingUpShape(permitsPerSecond, warmupMs, coldFactor),
      0,
      { permitsPerSecond, warmupMs, coldFactor },
      share,
    );
  });
}
