/**
 * Control timelines for the core controls suites (bans, refunds, penalties): generated rules and calls, run on
 * a ManualClock.
 */
import type { Algorithm } from '@sluice/core';
import fc from 'fast-check';
import { kindsWhere, shapeArb } from './algorithms.js';
import type { RuleOptions } from '../../packages/core/src/algorithms/algorithm.js';

/** A rule factory over the options every rule takes (so a test can add blockMs or a name). */
export type RuleMaker = (extra: Pick<RuleOptions, 'blockMs' | 'name'>) => Algorithm;

/**
 * Every algorithm (the registry's) with small generated limits; `refundable` keeps the kinds whose grants can
 * be given back (Guava's prepay cannot).
 */
export function ruleMakerArb(refundable = false): fc.Arbitrary<RuleMaker> {
  const kinds = refundable ? kindsWhere((rule) => rule.refundable) : undefined;
  return fc.tuple(shapeArb(kinds), fc.integer({ min: 1, max: 8 })).map(
    ([shape, limit]): RuleMaker =>
      (extra) =>
        shape(limit, extra),
  );
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
