import type { Algorithm } from '@sluice/core';
import type { RuleScope } from '../../packages/core/src/algorithms/algorithm.js';
import { algorithmArb as registryArb } from '@sluice/test-kit';
import fc from 'fast-check';

/** Every algorithm of the registry, with generated parameters (a rule name is given when `name` is set). */
export function algorithmArb(name?: string): fc.Arbitrary<Algorithm> {
  return registryArb(name === undefined ? {} : { common: { name } });
}

/** A policy of 2 or 3 rules of any algorithms. */
export const policyArb: fc.Arbitrary<Algorithm[]> = fc
  .integer({ min: 2, max: 3 })
  .chain((count) => fc.tuple(...Array.from({ length: count }, (_, i) => algorithmArb(`r${i}`))));

/**
 * A policy whose last rule is counted against another identity: a global rule every key shares, or a
 * per-tenant rule derived from the key. Requests for different keys meet in its state.
 */
export const sharedPolicyArb: fc.Arbitrary<Algorithm[]> = fc
  .tuple(
    algorithmArb('own'),
    fc.constantFrom<RuleScope>('global', (k: string) => k.slice(0, 1)),
  )
  .chain(([own, scope]) => algorithmArb('shared').map((shared) => [own, { ...shared, scope }]));

export interface Step {
  /** Time since the previous step (integer ms; the clock is an integer clock). */
  readonly dtMs: number;
  /** Requests made at this instant, in order (sent to Redis together, as one batch). */
  readonly requests: ReadonlyArray<{ key: string; permits: number; maxWaitMs: number; peek: boolean }>;
}

export const timelineArb: fc.Arbitrary<Step[]> = fc.array(
  fc.record({
    dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 6_000 })),
    requests: fc.array(
      fc.record({
        key: fc.constantFrom('a', 'b', 'c{1}', 'd:e'),
        permits: fc.oneof(
          { weight: 5, arbitrary: fc.constant(1) },
          { weight: 2, arbitrary: fc.integer({ min: 1, max: 25 }) },
        ),
        maxWaitMs: fc.oneof(
          { weight: 4, arbitrary: fc.constant(0) },
          { weight: 1, arbitrary: fc.integer({ min: 0, max: 5_000 }) },
        ),
        peek: fc.boolean().map((b) => b && Math.random() < 0.2),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  }),
  { minLength: 1, maxLength: 40 },
);

/** Integer start times: near zero, mid-range, and epoch-scale. */
export const startArb = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 1, max: 10_000_000 }),
  fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }),
);
