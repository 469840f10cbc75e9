import { describe, expect, it } from 'vitest';
import type { Algorithm } from './algorithm.js';
import { ALGORITHMS, ALGORITHM_KINDS } from '@sluice/test-kit';
import { fixedWindow } from './fixed-window.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowLog } from './sliding-window-log.js';

const T = 1_000_000;

/** Asks a rule for one permit at each instant, keeping the state of each grant: how many it granted. */
function grantedAt(algorithm: Algorithm, instants: readonly number[]): number {
  let state: unknown;
  let granted = 0;
  for (const now of instants) {
    const o = algorithm.consume(state, now, 1, 0);
    if (o.allowed) {
      granted++;
      state = o.state;
    }
  }
  return granted;
}

/** Drains a rule at T, steps the clock back and forth, and counts what it grants: never a second refill. */
const STEPPING_BACK = [T, T, T, T, T, T - 30_000, T - 30_000, T - 5_000, T, T, T - 60_000, T];

describe('a clock that steps back never refills twice', () => {
  // Every kind of the registry (3 per 10 s windows, buckets of 3 at 1 per second), and a leaky bucket's shape
  // mode; each grants across the steps back what the same requests all at T would get, and at least one.
  const cases: Array<[string, Algorithm]> = [
    ...ALGORITHM_KINDS.map((kind): [string, Algorithm] => [
      kind,
      ALGORITHMS[kind].example({ limit: 3, windowMs: 10_000, perSecond: 1 }),
    ]),
    ['leakyBucket shape', leakyBucket({ capacity: 3, leakPerSecond: 1, mode: 'shape' })],
  ];
  for (const [name, algorithm] of cases) {
    it(name, () => {
      const atT = grantedAt(
        algorithm,
        STEPPING_BACK.map(() => T),
      );
      expect(atT).toBeGreaterThanOrEqual(1);
      expect(grantedAt(algorithm, STEPPING_BACK)).toBe(atT);
    });
  }

  it('a bucket of 3 grants its 3, a shaped queue and Guava their 1 (what the cases above compare to)', () => {
    const atT = (algorithm: Algorithm) =>
      grantedAt(
        algorithm,
        STEPPING_BACK.map(() => T),
      );
    expect(atT(ALGORITHMS.tokenBucket.example({ limit: 3, windowMs: 10_000, perSecond: 1 }))).toBe(3);
    expect(atT(fixedWindow({ limit: 3, windowMs: 10_000 }))).toBe(3);
    expect(atT(leakyBucket({ capacity: 3, leakPerSecond: 1, mode: 'shape' }))).toBe(1);
    expect(atT(ALGORITHMS.smoothBursty.example({ limit: 3, windowMs: 10_000, perSecond: 1 }))).toBe(1);
  });
});

describe('algorithm behaviours worth pinning', () => {
  it('fixedWindow lets 2 x limit through around a boundary (the documented trade-off)', () => {
    const fw = fixedWindow({ limit: 5, windowMs: 1000 });
    let state: unknown;
    let granted = 0;
    for (const now of [999, 999, 999, 999, 999, 1000, 1000, 1000, 1000, 1000, 1000]) {
      const o = fw.consume(state as never, now, 1, 0);
      if (o.allowed) {
        granted++;
        state = o.state;
      }
    }
    expect(granted).toBe(10);
  });

  it('leakyBucket shape: each request leaves 1/rate after the one before, within capacity', () => {
    const lb = leakyBucket({ capacity: 4, leakPerSecond: 2, mode: 'shape' });
    let state: unknown;
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      const o = lb.consume(state as never, 0, 1, 10_000);
      if (o.allowed) {
        waits.push(o.waitMs);
        state = o.state;
      } else waits.push(-o.retryAfterMs);
    }
    expect(waits).toEqual([0, 500, 1000, 1500, -500, -500]);
  });

  it('slidingWindowLog: oldest grants leave first, retry exactly when enough have left', () => {
    const log = slidingWindowLog({ limit: 3, windowMs: 1000 });
    let state: unknown;
    for (const now of [0, 100, 200]) state = log.consume(state as never, now, 1, 0).state;
    expect(log.consume(state as never, 500, 2, 0)).toMatchObject({ allowed: false, retryAfterMs: 600 });
    expect(log.consume(state as never, 1100, 2, 0).allowed).toBe(true);
  });
});
