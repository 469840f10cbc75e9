import { describe, expect, it } from 'vitest';
import type { Algorithm } from './algorithm.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { smoothBursty } from './smooth.js';
import { tokenBucket } from './token-bucket.js';

/** Drains a rule at t, steps the clock back and forth, and counts what it grants: never a second refill. */
function grantedAcrossStepBack(algorithm: Algorithm): number {
  let state: unknown;
  let granted = 0;
  const t = 1_000_000;
  for (const now of [t, t, t, t, t, t - 30_000, t - 30_000, t - 5_000, t, t, t - 60_000, t]) {
    const o = algorithm.consume(state, now, 1, 0);
    if (o.allowed) {
      granted++;
      state = o.state;
    }
  }
  return granted;
}

describe('a clock that steps back never refills twice', () => {
  const cases: Array<[string, Algorithm, number]> = [
    ['tokenBucket', tokenBucket({ capacity: 3, refillPerSecond: 1 }), 3],
    ['leakyBucket police', leakyBucket({ capacity: 3, leakPerSecond: 1 }), 3],
    ['leakyBucket shape', leakyBucket({ capacity: 3, leakPerSecond: 1, mode: 'shape' }), 1],
    ['gcra', gcra({ rate: 1, burst: 3 }), 3],
    ['fixedWindow', fixedWindow({ limit: 3, windowMs: 10_000 }), 3],
    ['slidingWindowLog', slidingWindowLog({ limit: 3, windowMs: 10_000 }), 3],
    ['slidingWindowCounter', slidingWindowCounter({ limit: 3, windowMs: 10_000 }), 3],
    ['smoothBursty', smoothBursty({ permitsPerSecond: 1 }), 1],
  ];
  for (const [name, algorithm, expected] of cases) {
    it(name, () => expect(grantedAcrossStepBack(algorithm)).toBe(expected));
  }
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
