import fc from 'fast-check';
import type { Algorithm } from '../algorithms/algorithm.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { gcra } from '../algorithms/gcra.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { smoothBursty } from '../algorithms/smooth.js';
import { tokenBucket } from '../algorithms/token-bucket.js';

/** A rule factory over the options every rule takes (so a test can add blockMs or a name). */
export type RuleMaker = (extra: { blockMs?: number; name?: string }) => Algorithm;

/** Every algorithm with small generated parameters; `refundable` leaves out Guava's prepay. */
export function ruleMakerArb(refundable = false): fc.Arbitrary<RuleMaker> {
  const limit = fc.integer({ min: 1, max: 8 });
  const windowMs = fc.integer({ min: 10, max: 3_000 });
  const rate = fc.double({ min: 0.5, max: 50, noNaN: true });
  const makers: fc.Arbitrary<RuleMaker>[] = [
    fc.record({ limit, windowMs }).map((o) => (extra) => fixedWindow({ ...o, ...extra })),
    fc.record({ limit, windowMs }).map((o) => (extra) => slidingWindowCounter({ ...o, ...extra })),
    fc.record({ limit, windowMs }).map((o) => (extra) => slidingWindowLog({ ...o, ...extra })),
    fc
      .record({ capacity: limit, refillPerSecond: rate })
      .map((o) => (extra) => tokenBucket({ ...o, maxDebt: 0, ...extra })),
    fc.record({ rate, burst: limit }).map((o) => (extra) => gcra({ ...o, ...extra })),
    fc.record({ capacity: limit, leakPerSecond: rate }).map((o) => (extra) => leakyBucket({ ...o, ...extra })),
  ];
  if (!refundable) makers.push(rate.map((permitsPerSecond) => (extra) => smoothBursty({ permitsPerSecond, ...extra })));
  return fc.oneof(...makers);
}

/** One step of a controls timeline: time passes, then one call on one of two keys. */
export interface ControlStep {
  readonly advanceMs: number;
  readonly key: 'a' | 'b';
  readonly op: 'consume' | 'refund' | 'penalize' | 'block' | 'unblock';
  readonly permits: number;
}

export const controlStepsArb = (
  ops: readonly ControlStep['op'][] = ['consume', 'refund', 'penalize'],
): fc.Arbitrary<ControlStep[]> =>
  fc.array(
    fc.record({
      advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 2_000 })),
      key: fc.constantFrom<'a' | 'b'>('a', 'b'),
      op: fc.oneof(
        { weight: 4, arbitrary: fc.constant<ControlStep['op']>('consume') },
        { weight: 2, arbitrary: fc.constantFrom(...ops) },
      ),
      permits: fc.oneof(
        { weight: 3, arbitrary: fc.constant(1) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 10 }) },
      ),
    }),
    { maxLength: 60 },
  );
