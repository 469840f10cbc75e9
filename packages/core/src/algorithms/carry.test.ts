import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Algorithm, type AlgorithmKind, TOLERANCE_MS } from './algorithm.js';
import { calendarWindow } from './calendar-window.js';
import { CARRY_MODES, type CarryMode, carryState } from './carry.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { smoothBursty, smoothWarmingUp } from './smooth.js';
import { tokenBucket } from './token-bucket.js';
import { ALGORITHM_KINDS, historyArb, stateAfter } from '@sluice/test-kit';

/**
 * How carryState keeps a kind's use across a change: `counts` (whole grants, kept as they are under the same
 * window: COUNTS_USED in carry.ts and carry.lua), `setRate` (Guava's setRate on the stored permits) or `used`
 * (what was used, taken from the new rule's fresh state).
 */
type Carry = 'counts' | 'setRate' | 'used';

/**
 * Each kind: one rule shaped by a limit-like size and a period or rate, and how it carries. Typed by
 * AlgorithmKind: a new algorithm does not compile until it says how it carries, and the property below
 * fails if carry.ts does otherwise.
 */
const KINDS: {
  readonly [K in AlgorithmKind]: {
    readonly rule: (size: number, periodMs: number, rate: number, mode: 'police' | 'shape') => Algorithm;
    readonly carry: Carry;
  };
} = {
  fixedWindow: {
    rule: (size, periodMs) => fixedWindow({ limit: size, windowMs: periodMs }) as Algorithm,
    carry: 'counts',
  },
  calendarWindow: {
    // A period drawn from the period's length: the same period or not, as the scenario says.
    rule: (size, periodMs) =>
      calendarWindow({
        limit: size,
        period: periodMs < 30_000 ? 'day' : 'month',
        timeZone: periodMs % 2 === 0 ? 'Europe/Berlin' : 'UTC',
      }) as Algorithm,
    carry: 'counts',
  },
  slidingWindowCounter: {
    rule: (size, periodMs) => slidingWindowCounter({ limit: size, windowMs: periodMs }) as Algorithm,
    carry: 'counts',
  },
  slidingWindowLog: {
    rule: (size, periodMs) => slidingWindowLog({ limit: size, windowMs: periodMs }) as Algorithm,
    carry: 'counts',
  },
  tokenBucket: {
    rule: (size, _periodMs, rate) => tokenBucket({ capacity: size, refillPerSecond: rate }) as Algorithm,
    carry: 'used',
  },
  gcra: { rule: (size, _periodMs, rate) => gcra({ permitsPerSecond: rate, burst: size }) as Algorithm, carry: 'used' },
  leakyBucket: {
    rule: (size, _periodMs, rate, mode) => leakyBucket({ capacity: size, leakPerSecond: rate, mode }) as Algorithm,
    carry: 'used',
  },
  smoothBursty: {
    rule: (_size, periodMs, rate) =>
      smoothBursty({ permitsPerSecond: rate, maxBurstSeconds: periodMs / 1000 }) as Algorithm,
    carry: 'setRate',
  },
  smoothWarmingUp: {
    rule: (_size, periodMs, rate) => smoothWarmingUp({ permitsPerSecond: rate, warmupMs: periodMs }) as Algorithm,
    carry: 'setRate',
  },
};

/** One rule of `kind` shaped by a limit-like size and a period or rate. */
function rule(kind: AlgorithmKind, size: number, periodMs: number, mode: 'police' | 'shape'): Algorithm {
  return KINDS[kind].rule(size, periodMs, (size * 1000) / periodMs, mode);
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));

const scenario = fc.record({
  kind: fc.constantFrom(...ALGORITHM_KINDS),
  mode: fc.constantFrom(...CARRY_MODES),
  leaky: fc.constantFrom<'police' | 'shape'>('police', 'shape'),
  oldSize: fc.integer({ min: 1, max: 200 }),
  newSize: fc.integer({ min: 1, max: 200 }),
  oldPeriod: fc.integer({ min: 10, max: 60_000 }),
  samePeriod: fc.boolean(),
  newPeriod: fc.integer({ min: 10, max: 60_000 }),
  start: fc.integer({ min: 0, max: 2_000_000_000_000 }),
  steps: historyArb(30, 5_000, 60),
  later: fc.integer({ min: 0, max: 10_000 }),
});

describe('carryState: what a key spent when its rule changes', () => {
  it('carries what was used at the change, scaled in proportional mode, forgotten in fresh mode; never more', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const from = rule(s.kind, s.oldSize, s.oldPeriod, s.leaky);
        const to = rule(s.kind, s.newSize, s.samePeriod ? s.oldPeriod : s.newPeriod, s.leaky);
        const [state, last] = stateAfter(from, s.start, s.steps);
        const now = last + s.later;
        const carried = carryState(from, to, state, now, s.mode);
        if (s.mode === 'fresh' || state === undefined) {
          expect(carried).toBeUndefined();
          return;
        }
        const used = from.usedAt(state, now);
        if (KINDS[s.kind].carry === 'setRate') {
          // Guava's setRate: the permits stored scaled by the new burst over the old.
          const stored = ((from.burst - used) * to.burst) / from.burst;
          expect(close(to.burst - to.usedAt(carried, now), stored)).toBe(true);
          return;
        }
        let expected = s.mode === 'proportional' ? (used * to.limit) / from.limit : used;
        // A window's counts under the same window length are kept as they are; otherwise whole grants, rounded up.
        const asIs = s.mode === 'used' && from.stateFormat === to.stateFormat && KINDS[s.kind].carry === 'counts';
        if (KINDS[s.kind].carry === 'counts' && !asIs) expected = Math.ceil(expected - 1e-9);
        const carriedUse = to.usedAt(carried, now);
        expect(close(carriedUse, Math.max(0, expected)), `${carriedUse} carried, ${expected} expected`).toBe(true);
        // The new rule grants from it no more than its limit less what was carried, give or take what the rule
        // admits early by design (a grant may come TOLERANCE_MS early: that much of its rate).
        const slack = 1e-6 + (TOLERANCE_MS * to.ratePerSecond) / 1000;
        for (let permits = 1; permits <= to.limit; permits++) {
          if (to.consume(carried, now, permits, 0).allowed)
            expect(expected + permits).toBeLessThanOrEqual(to.limit + slack);
        }
      }),
      { numRuns: 3_000, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED) } : {}) },
    );
  });

  it('60 used of an old 100: 0 of a new 50 and 140 of a new 200 kept; 30 of 50 and 120 of 200 proportionally', () => {
    for (const kind of ['fixedWindow', 'tokenBucket', 'gcra', 'slidingWindowLog'] as const) {
      const from = rule(kind, 100, 60_000, 'police');
      const [state, now] = stateAfter(from, 1_000_000, [[0, 60, false]]);
      const remaining = (to: Algorithm, mode: CarryMode) => {
        const d = to.consume(carryState(from, to, state, now, mode), now, 1, 0);
        return d.allowed ? d.remaining + 1 : d.remaining;
      };
      const half = rule(kind, 50, 60_000, 'police');
      const twice = rule(kind, 200, 60_000, 'police');
      expect([remaining(half, 'used'), remaining(twice, 'used')], kind).toEqual([0, 140]);
      expect([remaining(half, 'proportional'), remaining(twice, 'proportional')], kind).toEqual([20, 80]);
      expect([remaining(half, 'fresh'), remaining(twice, 'fresh')], kind).toEqual([50, 200]);
    }
  });

  it('a window that changed length carries its count into the new window that holds the change', () => {
    const from = fixedWindow({ limit: 100, windowMs: 60_000 });
    const to = fixedWindow({ limit: 100, windowMs: 3_600_000 });
    const at = 7_200_000 + 30_000;
    const state = from.consume(undefined, at, 70, 0).state;
    expect(carryState(from, to, state, at + 1_000, 'used')).toEqual({ windowStart: 7_200_000, count: 70 });
    // Past the old window, nothing it counted is still used.
    expect(carryState(from, to, state, at + 60_000, 'used')).toBeUndefined();
  });
});
