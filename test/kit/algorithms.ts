/**
 * The one registry of algorithms for tests and benchmarks: for each kind, a rule of a chosen size and rules
 * of generated parameters. Typed by AlgorithmKind, so a new algorithm fails to type-check until it is
 * registered here, and every suite that iterates the registry (conformance, controls, properties, clients,
 * bench) covers it from then on. What an algorithm supports (refunds, leases, reservations) is the rule's own
 * property, read from it, never listed here.
 */
import {
  type Algorithm,
  type AlgorithmKind,
  calendarWindow,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '@sluice/core';
import fc from 'fast-check';
import type { RuleOptions } from '../../packages/core/src/algorithms/algorithm.js';

/** A rule's size: `limit` permits (a bucket's capacity, GCRA's burst), windows of `windowMs`, rates of `perSecond`. */
export interface RuleSize {
  readonly limit: number;
  readonly windowMs: number;
  readonly perSecond: number;
}

/** A rule shape: every parameter but the limit, so a policy or a limiter's plans can hold one shape at several limits. */
export type Shape = (limit: number, common?: RuleOptions) => Algorithm;

/** One algorithm, as tests build it. */
export interface AlgorithmCase {
  /** One rule of this kind, of `size`. */
  readonly example: (size: RuleSize, common?: RuleOptions) => Algorithm;
  /** Rules of this kind with generated parameters, the limit given apart. */
  readonly shapes: fc.Arbitrary<Shape>;
}

const windowMs = fc.integer({ min: 1, max: 5_000 });
/** A rate as a multiple of the limit: per-second refills from a twentieth of the limit to twenty times it. */
const perLimit = fc.double({ min: 0.05, max: 20, noNaN: true });
const fill = fc.double({ min: 0, max: 1, noNaN: true });

export const ALGORITHMS: { readonly [K in AlgorithmKind]: AlgorithmCase } = {
  fixedWindow: {
    example: ({ limit, windowMs }, common) => fixedWindow({ limit, windowMs, ...common }),
    shapes: windowMs.map((w) => (limit, common) => fixedWindow({ limit, windowMs: w, ...common })),
  },
  calendarWindow: {
    // A calendar day: a rule of this size whose window is the calendar's, not windowMs.
    example: ({ limit }, common) => calendarWindow({ limit, period: 'day', ...common }),
    shapes: fc
      .record({
        period: fc.constantFrom('day' as const, 'week' as const, 'month' as const, 'year' as const),
        timeZone: fc.constantFrom('UTC', 'Europe/Berlin', 'America/Sao_Paulo', 'Australia/Lord_Howe', 'Asia/Kolkata'),
        anchor: fc.option(fc.integer({ min: 0, max: 365 * 4 * 24 - 1 }), { nil: undefined }),
      })
      .map(
        ({ period, timeZone, anchor }) =>
          (limit, common) =>
            calendarWindow({
              limit,
              period,
              timeZone,
              // An anchor at a whole hour of the years 2024-2027 (a leap day among them).
              ...(anchor === undefined ? {} : { anchor: new Date(Date.UTC(2024, 0, 1) + anchor * 3_600_000) }),
              ...common,
            }),
      ),
  },
  slidingWindowLog: {
    example: ({ limit, windowMs }, common) => slidingWindowLog({ limit, windowMs, ...common }),
    shapes: windowMs.map((w) => (limit, common) => slidingWindowLog({ limit, windowMs: w, ...common })),
  },
  slidingWindowCounter: {
    example: ({ limit, windowMs }, common) => slidingWindowCounter({ limit, windowMs, ...common }),
    shapes: windowMs.map((w) => (limit, common) => slidingWindowCounter({ limit, windowMs: w, ...common })),
  },
  tokenBucket: {
    example: ({ limit, perSecond }, common) => tokenBucket({ capacity: limit, refillPerSecond: perSecond, ...common }),
    shapes: fc.record({ rate: perLimit, fill, maxDebt: fc.integer({ min: 0, max: 25 }) }).map(
      ({ rate, fill, maxDebt }) =>
        (limit, common) =>
          tokenBucket({
            capacity: limit,
            refillPerSecond: rate * limit,
            initialPermits: Math.floor(limit * fill),
            maxDebt,
            ...common,
          }),
    ),
  },
  leakyBucket: {
    example: ({ limit, perSecond }, common) => leakyBucket({ capacity: limit, leakPerSecond: perSecond, ...common }),
    shapes: fc.record({ rate: perLimit, mode: fc.constantFrom('police' as const, 'shape' as const) }).map(
      ({ rate, mode }) =>
        (limit, common) =>
          leakyBucket({ capacity: limit, leakPerSecond: rate * limit, mode, ...common }),
    ),
  },
  gcra: {
    example: ({ limit, perSecond }, common) => gcra({ permitsPerSecond: perSecond, burst: limit, ...common }),
    shapes: perLimit.map(
      (rate) => (limit, common) => gcra({ permitsPerSecond: rate * limit, burst: limit, ...common }),
    ),
  },
  smoothBursty: {
    example: ({ perSecond }, common) => smoothBursty({ permitsPerSecond: perSecond, ...common }),
    shapes: fc
      .record({ rate: perLimit, maxBurstSeconds: fc.double({ min: 0, max: 3, noNaN: true }), fill })
      .map(({ rate, maxBurstSeconds, fill }) => (limit, common) => {
        const permitsPerSecond = rate * limit;
        return smoothBursty({
          permitsPerSecond,
          maxBurstSeconds,
          initialPermits: permitsPerSecond * maxBurstSeconds * fill,
          ...common,
        });
      }),
  },
  smoothWarmingUp: {
    example: ({ windowMs, perSecond }, common) =>
      smoothWarmingUp({ permitsPerSecond: perSecond, warmupMs: windowMs, ...common }),
    shapes: fc
      .record({
        rate: perLimit,
        warmupMs: fc.integer({ min: 1, max: 10_000 }),
        coldFactor: fc.double({ min: 1, max: 10, noNaN: true }),
      })
      .map(
        ({ rate, warmupMs, coldFactor }) =>
          (limit, common) =>
            smoothWarmingUp({ permitsPerSecond: rate * limit, warmupMs, coldFactor, ...common }),
      ),
  },
};

/** Every registered kind, in the registry's order. */
export const ALGORITHM_KINDS = Object.keys(ALGORITHMS) as AlgorithmKind[];

/** A size every kind can be built at, for asking a kind what its rules support. */
const PROBE: RuleSize = { limit: 2, windowMs: 1_000, perSecond: 1 };

/** The kinds whose rules satisfy `has` (refundable, leasable, ...), asked of the rules themselves. */
export function kindsWhere(has: (rule: Algorithm) => boolean): AlgorithmKind[] {
  return ALGORITHM_KINDS.filter((kind) => has(ALGORITHMS[kind].example(PROBE)));
}

/** One rule of every kind, of `size`. */
export function everyAlgorithm(size: RuleSize, common?: RuleOptions): Algorithm[] {
  return ALGORITHM_KINDS.map((kind) => ALGORITHMS[kind].example(size, common));
}

/** Rule shapes of the given kinds (every kind unless given), with generated parameters. */
export function shapeArb(kinds: readonly AlgorithmKind[] = ALGORITHM_KINDS): fc.Arbitrary<Shape> {
  return fc.oneof(...kinds.map((kind) => ALGORITHMS[kind].shapes));
}

/**
 * Rules of the given kinds (every kind unless given), with generated parameters and limits up to `maxLimit`;
 * `common` options (a name, a ban) on each.
 */
export function algorithmArb(
  options: {
    readonly kinds?: readonly AlgorithmKind[];
    readonly maxLimit?: number;
    readonly common?: RuleOptions;
  } = {},
): fc.Arbitrary<Algorithm> {
  const limit = fc.integer({ min: 1, max: options.maxLimit ?? 20 });
  return fc.tuple(shapeArb(options.kinds), limit).map(([shape, l]) => shape(l, options.common));
}
