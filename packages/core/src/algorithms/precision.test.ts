import { describe, expect, it } from 'vitest';
import type { Algorithm } from './algorithm.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { smoothBursty, smoothWarmingUp } from './smooth.js';
import { tokenBucket } from './token-bucket.js';

/**
 * A key kept saturated for a long time at epoch-scale wall time, with a rate whose interval is not exactly
 * representable (1000/900 ms): a state that adds the interval to an epoch-scale time on every grant rounds
 * each time (a double near 1.76e12 ms carries ~0.24 us), and the error piles up while the key stays busy.
 * The bound must hold over the whole run, to the documented 1 us of time.
 */
function saturate(algorithm: Algorithm, grants: number, ratePerMs: number, capacity: number, maxWaitMs = 0): number {
  let state: unknown;
  const now = 1_763_750_123_456.789;
  const admissions = [];
  let granted = 0;
  // Requests arrive on their own clock, every 0.137 ms: far faster than the rate, so the key never rests.
  for (let step = 0; granted < grants; step++) {
    const at = now + step * 0.137;
    const o = algorithm.consume(state, at, 1, maxWaitMs);
    if (o.allowed) {
      state = o.state;
      admissions.push({ atMs: at + o.waitMs, decidedAtMs: at, key: 0, permits: 1 });
      granted++;
    }
  }
  // Over the whole run: n grants in [first, last] against capacity + rate x T (drift adds up across it).
  const first = admissions[0] as { atMs: number };
  const last = admissions[admissions.length - 1] as { atMs: number };
  return capacity + ratePerMs * (last.atMs - first.atMs + 1e-3) - admissions.length + 1e-6;
}

describe('no precision drift while a key stays saturated at epoch-scale time', () => {
  for (const [name, algorithm, maxWaitMs, burst] of [
    ['tokenBucket', tokenBucket({ capacity: 10, refillPerSecond: 900 }), 0, 10],
    ['gcra', gcra({ permitsPerSecond: 900, burst: 10 }), 0, 10],
    // Shaped: every request waits its turn in the queue; departures must not outrun the leak rate.
    ['leakyBucket shape', leakyBucket({ capacity: 900, leakPerSecond: 900, mode: 'shape' }), 1000, 1],
    // No burst stored (maxBurstSeconds 0), so the bound is the rate plus the prepaid grant; immediate grants,
    // and reservations (every request waits its turn: the next free time runs ahead of the clock).
    ['smoothBursty', smoothBursty({ permitsPerSecond: 900, maxBurstSeconds: 0 }), 0, 1],
    ['smoothBursty reserving', smoothBursty({ permitsPerSecond: 900, maxBurstSeconds: 0 }), Infinity, 1],
    ['smoothWarmingUp', smoothWarmingUp({ permitsPerSecond: 900, warmupMs: 10 }), 0, 10],
  ] as const) {
    it(`${name}: 200,000 grants at 900/s under a steady stream of requests`, () => {
      expect(saturate(algorithm, 200_000, 0.9, burst, maxWaitMs)).toBeGreaterThanOrEqual(0);
    });
  }
});
