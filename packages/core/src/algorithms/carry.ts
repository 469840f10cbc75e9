import { type Algorithm, EPSILON } from './algorithm.js';
import type { SmoothState } from './smooth.js';

/**
 * What happens to what a key already spent when its rule's parameters change (`limiter.reconfigure`), as
 * bucket4j's strategies say it:
 * - `'used'` keeps what was used: 60 used of an old limit of 100 leaves 0 of a new 50 and 140 of a new 200.
 * - `'proportional'` keeps the fraction used: 60 of 100 is 30 of a new 50 and 120 of a new 200.
 * - `'fresh'` forgets it: every key starts from the new rule's fresh state.
 * Guava's smooth rules change as Guava's `setRate` does, in the first two modes alike: the stored permits
 * are scaled to the new burst and the next free time stays (the next request still pays at the old rate).
 */
export type CarryMode = 'used' | 'proportional' | 'fresh';

/** Every CarryMode, in the order the docs give them (the first is the default). */
export const CARRY_MODES: readonly CarryMode[] = ['used', 'proportional', 'fresh'];

/**
 * The kinds whose state is what was used, kept as it is when it means the same under both rules; their
 * counts are whole grants, rounded up (never down) when carried otherwise. (carry.lua holds the same set.)
 */
const COUNTS_USED = new Set(['fixedWindow', 'calendarWindow', 'slidingWindowCounter', 'slidingWindowLog']);

/**
 * The state of `to` for a key whose state `state` was kept under `from` (the same kind of rule, with the
 * parameters before a change), at `nowMs`, by `mode` (see CarryMode); undefined: a fresh state. Never
 * refills: what was used at `nowMs` is carried (scaled, in proportional mode), never what was used before
 * it. A window whose length changed carries its count into the new window that holds `nowMs`, so a key never
 * gets more than the new rule allows given what it used; the estimate of a sliding counter and the grants of
 * a log likewise carry as used at `nowMs` (their spread over the old window is not kept).
 * A carried bucket is the new rule's fresh bucket with what was used taken from it (from `initial` tokens,
 * for a bucket that starts part-filled).
 * @example
 * carryState(tokenBucket({ capacity: 100, refillPerSecond: 1 }), tokenBucket({ capacity: 50, refillPerSecond: 1 }), state, now, 'used')
 */
export function carryState<S>(
  from: Algorithm<S>,
  to: Algorithm<S>,
  state: S | undefined,
  nowMs: number,
  mode: CarryMode,
): S | undefined {
  if (state === undefined || mode === 'fresh') return undefined;
  if (to.kind === 'smoothBursty' || to.kind === 'smoothWarmingUp') return guavaSetRate(from, to, state, nowMs);
  if (mode === 'used' && from.stateFormat === to.stateFormat && COUNTS_USED.has(to.kind)) return state;
  let used = from.usedAt(state, nowMs);
  if (mode === 'proportional') used = (used * to.limit) / from.limit;
  if (COUNTS_USED.has(to.kind)) used = Math.ceil(used - EPSILON);
  if (!(used > EPSILON)) return undefined;
  return to.penalize(undefined, nowMs, used).state;
}

/**
 * Guava's setRate on a stored smooth state: the permits stored at `nowMs` (resynced at the old rate) scaled
 * by the new burst over the old, the next free time kept (or now, when it is past).
 */
function guavaSetRate<S>(from: Algorithm<S>, to: Algorithm<S>, state: S, nowMs: number): S {
  const s = state as unknown as SmoothState;
  const stored = from.burst - from.usedAt(state, nowMs);
  return {
    storedPermits: (stored * to.burst) / from.burst,
    // Resynced: a next free time already past moves to now (its permits are in `stored`).
    aheadMs: Math.max(0, s.aheadMs - (nowMs - s.at)),
    at: nowMs,
  } satisfies SmoothState as unknown as S;
}

/**
 * How long after a change the states of `rules` are carried over (ms): as long as any of them can matter
 * after a decision, with room for a debt of twice the rule's burst (a reservation or a penalty). A state
 * penalized deeper than that starts fresh under the new rules once this has passed.
 * @example
 * carryWindowMs([fixedWindow({ limit: 10, windowMs: 60_000 })]) // 180_000
 */
export function carryWindowMs(rules: readonly Algorithm[]): number {
  return Math.max(...rules.map((rule) => 2 * rule.windowMs + rule.penalize(undefined, 0, 2 * rule.burst).ttlMs));
}
