/**
 * The memory engine's decide and adjust: core's memory store's decisions (IdentityBinding's, each rule's
 * state in a cell of its own) over states named by the caller, so that rules of one state name share it
 * whatever rule list they are asked in.
 */
import type { Algorithm } from '../algorithms/algorithm.js';
import { carryState } from '../algorithms/carry.js';
import { identityOf } from '../algorithms/rule-name.js';
import { EXPLICIT_BAN, banAfter, blockedDecision } from '../engine/ban.js';
import { grantedAt } from '../engine/memory-cells.js';
import { type RuleVerdict, decidePolicy, ruleDecision } from '../engine/policy.js';
import { type Permits, permitsOfRule } from '../engine/store.js';
import type { Decision } from '../foundation/decision.js';
import type { Adjustment, CarryLinks, EngineAsk, EngineDecision, EngineRules } from './engine.js';
import { type EngineState, compositeKey } from './memory-engine-state.js';

/** Each rule's state key for `key`, in rule order. */
export function stateKeys(rules: EngineRules, key: string): string[] {
  return rules.rules.map((rule, r) => compositeKey(rules.prefix, rules.states[r] as string, identityOf(rule, key)));
}

/** A verdict as the contract answers it: the four numbers, nothing of the rule's state. */
function verdictOf(v: RuleVerdict): RuleVerdict {
  return { allowed: v.allowed, remaining: v.remaining, retryAfterMs: v.retryAfterMs, resetAfterMs: v.resetAfterMs };
}

/** A peek's decision: it took nothing, so what it probed with is still there (withPeekedPermit, of any count). */
function peeked(d: Decision, rules: readonly Algorithm[], permits: Permits): Decision {
  if (!d.allowed) return d;
  const of = (name: string): number => {
    const rule = rules.find((r) => r.name === name);
    return rule === undefined ? 0 : permitsOfRule(permits, rule);
  };
  return {
    ...d,
    remaining: d.remaining + of(d.rule),
    ...(d.rules ? { rules: d.rules.map((r) => ({ ...r, remaining: r.remaining + of(r.name) })) } : {}),
  };
}

/** Decides one ask at `now`. */
export function decideAsk(data: EngineState, rules: EngineRules, ask: EngineAsk, now: number): EngineDecision {
  const list = rules.rules;
  const keys = stateKeys(rules, ask.key);
  const states = keys.map((k) => data.states.get(k));
  const { permits } = ask;
  const ban = data.ban(rules.prefix, ask.key, now);
  if (ban !== undefined) {
    const verdicts = list.map((rule, r) => rule.consume(states[r], now, permitsOfRule(permits, rule), 0));
    const restMs = ban.until - now;
    return {
      decision: blockedDecision(list, verdicts, ban.rule, restMs, permits),
      decidedAtMs: now,
      verdicts: verdicts.map(verdictOf),
      ban: { rule: ban.rule, restMs },
    };
  }
  let decision: Decision;
  let verdicts: readonly RuleVerdict[];
  if (list.length === 1) {
    const rule = list[0] as Algorithm;
    const o = rule.consume(states[0], now, permitsOfRule(permits, rule), ask.maxWaitMs);
    // A denial never deletes a state (another rule list may read it): an undefined one is not written.
    if (!ask.peek && o.state !== states[0] && o.state !== undefined)
      data.states.set(keys[0] as string, o.state, o.ttlMs);
    decision = ruleDecision(rule, o);
    verdicts = [o];
  } else {
    const p = decidePolicy(list, states, now, permits);
    if (!ask.peek && p.states !== undefined) {
      p.states.forEach((state, r) => {
        if (state !== undefined) data.states.set(keys[r] as string, state, p.ttlMs);
      });
    }
    decision = p.decision;
    verdicts = p.verdicts;
  }
  const answer = { decidedAtMs: now, verdicts: verdicts.map(verdictOf), ban: undefined };
  if (ask.peek) return { ...answer, decision: peeked(decision, list, permits) };
  const banned = decision.allowed ? undefined : banAfter(list, verdicts, now);
  if (banned === undefined) return { ...answer, decision };
  const started = data.startBan(rules.prefix, ask.key, banned, now);
  const restMs = started.until - now;
  return {
    ...answer,
    decision: blockedDecision(list, verdicts, started.rule, restMs, permits),
    ban: { rule: started.rule, restMs },
  };
}

/**
 * One rule's carry (see Adjustment 'carry'), carry_key.lua's twin: into `target` (the rule's state key) when it
 * holds nothing, from the newest earlier state, through each change since; the earlier states deleted.
 */
function carryLink(
  data: EngineState,
  prefix: string,
  to: Algorithm,
  target: string,
  link: CarryLinks,
  key: string,
  now: number,
): void {
  if (data.states.get(target) !== undefined) return;
  const bases = link.from.map((f) => compositeKey(prefix, f.state, identityOf(f.rule, key)));
  const found = bases.findIndex((base) => data.states.get(base) !== undefined);
  if (found === -1) return;
  let state: unknown = data.states.get(bases[found] as string);
  for (let j = found; j >= 0; j--) {
    const from = link.from[j] as CarryLinks['from'][number];
    const next = j === 0 ? to : (link.from[j - 1] as CarryLinks['from'][number]).rule;
    state = carryState(from.rule, next, state, now, from.mode);
  }
  for (const base of bases) data.states.delete(base);
  if (state === undefined) return;
  const kept = to.penalize(state, now, 0);
  if (kept.state === undefined) data.states.delete(target);
  else data.states.set(target, kept.state, kept.ttlMs);
}

/** Adjusts one key at `now`; true when it freed something (see AdjustAnswer). */
export function adjustKey(
  data: EngineState,
  rules: EngineRules,
  key: string,
  adjustment: Adjustment,
  now: number,
): boolean {
  const list = rules.rules;
  const keys = stateKeys(rules, key);
  switch (adjustment.op) {
    case 'refund': {
      const at =
        adjustment.grantedAtMs !== undefined ? adjustment.grantedAtMs : grantedAt(now, adjustment.grantedMsAgo);
      let freed = false;
      list.forEach((rule, r) => {
        const k = keys[r] as string;
        const state = data.states.get(k);
        // The key's own rules only: a shared rule's permits are every key's.
        if (rule.scope !== undefined || state === undefined) return;
        if (!freed && !rule.consume(state, now, 1, 0).allowed) freed = true;
        const refunded = rule.refund(state, now, permitsOfRule(adjustment.permits, rule), at).state;
        // A refund never makes a state matter longer: the entry keeps its expiry.
        if (refunded === undefined) data.states.delete(k);
        else data.states.set(k, refunded);
      });
      return freed;
    }
    case 'penalize':
      list.forEach((rule, r) => {
        const k = keys[r] as string;
        const adjusted = rule.penalize(data.states.get(k), now, permitsOfRule(adjustment.permits, rule));
        if (adjusted.state === undefined) data.states.delete(k);
        else data.states.set(k, adjusted.state, adjusted.ttlMs);
      });
      return false;
    case 'reset': {
      let freed = false;
      list.forEach((rule, r) => {
        // Rules counted against other identities are shared, and stay.
        if (rule.scope !== undefined) return;
        if (data.states.delete(keys[r] as string)) freed = true;
        // Its lessees go too (not counted as freed: they are who leased it, not its standing).
        data.lessees.delete(compositeKey(keys[r] as string, 'lessees'));
      });
      // A ban that has ended on the decision's clock is nothing to forget, though it may not be reclaimed yet.
      const banned = data.ban(rules.prefix, key, now) !== undefined;
      data.bans.delete(compositeKey(rules.prefix, key));
      return banned || freed;
    }
    case 'block': {
      // A rule's ban that ends later is kept to its end, as the operator's.
      const until = Math.max(now + adjustment.ms, data.ban(rules.prefix, key, now)?.until ?? 0);
      data.bans.delete(compositeKey(rules.prefix, key));
      data.startBan(rules.prefix, key, { until, rule: EXPLICIT_BAN }, now);
      return false;
    }
    case 'unblock': {
      const banned = data.ban(rules.prefix, key, now) !== undefined;
      data.bans.delete(compositeKey(rules.prefix, key));
      return banned;
    }
    case 'carry':
      for (const link of adjustment.links)
        carryLink(data, rules.prefix, list[link.rule] as Algorithm, keys[link.rule] as string, link, key, now);
      return false;
  }
}
