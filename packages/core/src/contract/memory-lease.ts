/**
 * The memory engine's lease: the twin of @sluice/hybrid's lease.lua. A lease is the rule's own consume of as
 * many permits as it grants now, on the state exact mode keeps; the key's lessees are counted beside it.
 */
import type { Algorithm } from '../algorithms/algorithm.js';
import type { EngineRules, LeaseAnswer, LeaseAsk } from './engine.js';
import { stateKeys } from './memory-decide.js';
import { type EngineState, compositeKey } from './memory-engine-state.js';

/** The key's live lessees at `now`, this node registered first when `register` (or when none are counted). */
function countLessees(
  data: EngineState,
  key: string,
  ask: LeaseAsk,
  now: number,
): { live: number; registered: boolean } {
  const lessees = data.lessees.get(key);
  let register = ask.register;
  let live = 0;
  if (!register) {
    live = lessees?.size ?? 0;
    // The set is gone (expired): this node registers after all.
    register = live === 0;
  }
  if (register) {
    const set = lessees ?? new Map<string, number>();
    set.set(ask.node, now);
    const before = now - ask.liveMs;
    for (const [node, seen] of set) if (seen <= before) set.delete(node);
    live = set.size;
    data.lessees.set(key, set, Math.ceil(ask.liveMs * 2));
  }
  return { live, registered: register };
}

/** Leases up to `ask.want` permits of the one rule of `rules` at `now`. */
export function leaseOf(data: EngineState, rules: EngineRules, ask: LeaseAsk, now: number): LeaseAnswer {
  const rule = rules.rules[0] as Algorithm;
  const stateKey = stateKeys(rules, ask.key)[0] as string;
  const { live, registered } = countLessees(data, compositeKey(stateKey, 'lessees'), ask, now);
  let want = ask.want;
  if (ask.hoardingDivisor !== undefined)
    want = Math.min(want, Math.max(1, Math.floor(rule.burst / (ask.hoardingDivisor * live))));

  let state = data.states.get(stateKey);
  // The most the rule grants now: `want` if it can; else what its denial says is left, trying fewer until one
  // is granted (a denial's remaining is whole permits, so this settles in a step or two).
  let granted = 0;
  let left = 0;
  let attempt = want;
  while (attempt >= 1) {
    const o = rule.consume(state, now, attempt, 0);
    left = o.remaining;
    if (o.allowed) {
      granted = attempt;
      if (o.state !== undefined) data.states.set(stateKey, o.state, o.ttlMs);
      state = o.state;
      break;
    }
    if (o.state !== state && o.state !== undefined) {
      // A never-seen key is anchored even when refused, so it starts refilling from now.
      data.states.set(stateKey, o.state, o.ttlMs);
      state = o.state;
    }
    attempt = Math.min(attempt - 1, o.remaining);
  }
  // A short lease emptied the rule: when `want` permits would be there again.
  const retryMs = granted < want ? rule.consume(state, now, want, 0).retryAfterMs : 0;
  return { granted, retryMs, decidedAtMs: now, lessees: live, centralRemaining: left, registered };
}
