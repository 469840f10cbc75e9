/**
 * The rules the conformance suite decides: for every algorithm kind, a rule of random parameters from sets a
 * limiter would use. Typed by AlgorithmKind, so a new algorithm fails to type-check until it is listed here,
 * and every case that iterates this registry covers it from then on.
 */
import type { Algorithm, AlgorithmKind, RuleOptions } from '../../algorithms/algorithm.js';
import { calendarWindow } from '../../algorithms/calendar-window.js';
import { RULE_FACTORIES } from '../../algorithms/rule-spec.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { gcra } from '../../algorithms/gcra.js';
import { leakyBucket } from '../../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import { smoothBursty, smoothWarmingUp } from '../../algorithms/smooth.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import type { Prng } from './prng.js';

/** Makes one rule of a kind, of random parameters, with `common` options (a name, a key, a ban). */
export type RuleMaker = (rng: Prng, common: RuleOptions) => Algorithm;

const LIMITS = [1, 2, 3, 5, 10] as const;
/** Windows of a second and more: a remote engine's states expire on its own clock, never before the timeline's. */
const WINDOWS = [1_000, 2_000, 5_000, 60_000] as const;
const RATES = [0.5, 1, 2, 5, 20] as const;

export const CONFORMANCE_RULES: { readonly [K in AlgorithmKind]: RuleMaker } = {
  fixedWindow: (rng, common) => fixedWindow({ limit: rng.pick(LIMITS), windowMs: rng.pick(WINDOWS), ...common }),
  calendarWindow: (rng, common) =>
    calendarWindow({
      limit: rng.pick(LIMITS),
      period: rng.pick(['day', 'week', 'month', 'year'] as const),
      timeZone: rng.pick(['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/Sao_Paulo'] as const),
      ...common,
    }),
  slidingWindowLog: (rng, common) =>
    slidingWindowLog({ limit: rng.pick(LIMITS), windowMs: rng.pick(WINDOWS), ...common }),
  slidingWindowCounter: (rng, common) =>
    slidingWindowCounter({ limit: rng.pick(LIMITS), windowMs: rng.pick(WINDOWS), ...common }),
  tokenBucket: (rng, common) => {
    const capacity = rng.pick(LIMITS);
    return tokenBucket({
      capacity,
      refillPerSecond: rng.pick(RATES),
      initialPermits: rng.int(0, capacity),
      maxDebt: rng.pick([0, 0, 3]),
      ...common,
    });
  },
  leakyBucket: (rng, common) =>
    leakyBucket({
      capacity: rng.pick(LIMITS),
      leakPerSecond: rng.pick(RATES),
      mode: rng.pick(['police', 'shape'] as const),
      ...common,
    }),
  gcra: (rng, common) => gcra({ permitsPerSecond: rng.pick(RATES), burst: rng.pick(LIMITS), ...common }),
  smoothBursty: (rng, common) => {
    const permitsPerSecond = rng.pick(RATES);
    const maxBurstSeconds = rng.pick([0, 1, 2.5]);
    return smoothBursty({
      permitsPerSecond,
      maxBurstSeconds,
      initialPermits: permitsPerSecond * maxBurstSeconds * rng.pick([0, 0.5, 1]),
      ...common,
    });
  },
  smoothWarmingUp: (rng, common) =>
    smoothWarmingUp({
      permitsPerSecond: rng.pick(RATES),
      warmupMs: rng.pick([1_000, 3_000]),
      coldFactor: rng.pick([2, 3]),
      ...common,
    }),
};

/** Every kind of core's registry of algorithms (RULE_FACTORIES), in its order. */
export const CONFORMANCE_KINDS = Object.keys(RULE_FACTORIES) as AlgorithmKind[];
