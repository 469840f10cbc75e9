import type { Algorithm, Clock } from '@sluice/core';
import type { CarriedBinding } from '@sluice/core/internal';

/*
 * What a divided node that joined a fleet late assumes of a key it never held (FleetShare.freshKeysSpent: the
 * other nodes may have spent it), when a change of the rule meets it and when it holds no share to ask.
 */

/** A binding whose states can be carried (BoundStore & StateAccess). */
export type Carriable = ConstructorParameters<typeof CarriedBinding>[0];

/**
 * `bound`, whose take() hands a key it holds no state for over as spent under `shared` (the rule before a
 * change, at this node's share): what a joiner assumes of a key it never met, carried to the rule after it.
 * @example
 * new CarriedBinding(next, [shared], { bound: spentWhereMissing(before, oldShared, clock), ... }, 'used', clock)
 */
export function spentWhereMissing(bound: Carriable, shared: Algorithm, clock: Clock): Carriable {
  return {
    consume: (key, permits, maxWaitMs, note) => bound.consume(key, permits, maxWaitMs, note),
    peek: (key) => bound.peek(key),
    reset: (key) => bound.reset(key),
    seed: (key, states, nowMs) => bound.seed(key, states, nowMs),
    take: (key) => bound.take(key) ?? [shared.penalize(undefined, clock.now(), 0).state],
  };
}

/**
 * How long a spent state of `rule` takes to free `permits` from `nowMs` (Infinity: never): a window's end,
 * a bucket's refill of them.
 * @example
 * untilSpentFrees(fixedWindow({ limit: 10, windowMs: 60_000 }), 1, 15_000) // 45_000
 */
export function untilSpentFrees(rule: Algorithm, permits: number, nowMs: number): number {
  const spent = rule.penalize(undefined, nowMs, rule.burst).state;
  return rule.consume(spent, nowMs, permits, 0).retryAfterMs;
}
