import type { Algorithm } from '../algorithms/algorithm.js';
import type { Decision } from '../foundation/decision.js';
import { type RuleVerdict, mergePolicy } from './policy.js';
import type { Permits } from './store.js';

/**
 * A key's ban: until when (on the store's decision clock), and the index of the rule whose `blockMs` set it,
 * or -1 for an explicit `block()`. Kept apart from the rules' states: a ban outlives the window that started it.
 */
export interface Ban {
  readonly until: number;
  readonly rule: number;
}

/** The rule index an explicit `block()` is recorded with. */
export const EXPLICIT_BAN = -1;

/**
 * The ban a denial starts at `nowMs`: from the denying rule with the longest `blockMs` (the first of equals),
 * or undefined when no denying rule bans. The Redis script (decide.lua, `ban_after`) is its twin.
 * @example
 * const ban = banAfter(rules, verdicts, now) // the ban a denial starts, if a denying rule has blockMs
 */
export function banAfter(
  rules: readonly Algorithm[],
  verdicts: readonly { readonly allowed: boolean }[],
  nowMs: number,
): Ban | undefined {
  let rule = -1;
  let longest = 0;
  for (let r = 0; r < rules.length; r++) {
    const blockMs = (rules[r] as Algorithm).blockMs;
    if (blockMs > longest && !(verdicts[r] as { allowed: boolean }).allowed) {
      longest = blockMs;
      rule = r;
    }
  }
  return rule === -1 ? undefined : { until: nowMs + longest, rule };
}

/**
 * The longer of a ban in force and a new one (an explicit block never shortens a ban).
 * @example
 * bans.set(key, longerBan(bans.get(key), { rule: 0, until: now + 60_000 }))
 */
export function longerBan(current: Ban | undefined, next: Ban): Ban {
  return current !== undefined && current.until >= next.until ? current : next;
}

/**
 * The one answer for a blocked key, used by every store (the memory store from its rules' verdicts, the Redis
 * store from the script's): denied, `blocked: true`, nothing taken. The banning rule (every rule, for an
 * explicit block, or a rule index these rules lack) has nothing left and retries no sooner than the ban's end, `restMs` from now; a rule that
 * would deny longer keeps its own longer wait, so retrying at `retryAfterMs` succeeds if nothing else arrives.
 * Other rules report what they would have said. `verdicts` are each rule's own answer for the request.
 * @example
 * if (ban !== undefined && ban.until > now) return blockedDecision(rules, verdicts, ban.rule, ban.until - now, permits)
 */
export function blockedDecision(
  rules: readonly Algorithm[],
  verdicts: readonly RuleVerdict[],
  ban: number,
  restMs: number,
  permits: Permits,
): Decision {
  // A rule index these rules do not have (a ban set under another plan's rules) floors them all, as an explicit block.
  const everyRule = !(ban >= 0 && ban < rules.length);
  const floored = verdicts.map((v, r) => {
    if (!(everyRule || ban === r)) return v;
    const wait = Math.max(v.allowed ? 0 : v.retryAfterMs, restMs);
    // Its reset is that same instant: only time moves it on, so a deny cache may answer it until then.
    return { allowed: false, remaining: 0, retryAfterMs: wait, resetAfterMs: Number.isFinite(wait) ? wait : restMs };
  });
  if (rules.length > 1) return { ...mergePolicy(rules, floored, permits), blocked: true };
  const v = floored[0] as RuleVerdict;
  const rule = rules[0] as Algorithm;
  return {
    allowed: false,
    limit: rule.limit,
    remaining: 0,
    retryAfterMs: v.retryAfterMs,
    resetAfterMs: v.resetAfterMs,
    waitMs: 0,
    rule: rule.name,
    blocked: true,
  };
}
