import type { Algorithm, Outcome } from './algorithms/algorithm.js';
import type { Decision, RuleStatus } from './decision.js';
import { SluiceRangeError, SluiceTypeError } from './errors.js';
import { describe } from './validate.js';

/** A limiter's rules: one algorithm, or a policy of several that must all allow. */
export type Rules = Algorithm | readonly Algorithm[];

function isAlgorithm(value: unknown): value is Algorithm {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Algorithm).consume === 'function' &&
    typeof (value as Algorithm).kind === 'string'
  );
}

/**
 * Checks a limiter's `algorithm` option and returns its rules as a list. Rules of one policy need
 * distinct names, because each keeps its own state under its name.
 */
export function normalizeRules(value: unknown): readonly Algorithm[] {
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (list.length === 0) throw new SluiceRangeError('algorithm', value, 'algorithm must list at least one rule, got []');
  const seen = new Set<string>();
  return list.map((rule, i) => {
    if (!isAlgorithm(rule)) {
      const where = Array.isArray(value) ? `algorithm[${i}]` : 'algorithm';
      throw new SluiceTypeError(where, rule, `${where} must be a rule such as tokenBucket({...}), got ${describe(rule)}`);
    }
    if (seen.has(rule.name)) {
      throw new SluiceRangeError(
        `algorithm[${i}].name`,
        rule.name,
        `rule names in a policy must be unique; give one of the rules named ${JSON.stringify(rule.name)} a name`,
      );
    }
    seen.add(rule.name);
    return rule;
  });
}

/** Builds the public Decision of a single rule. */
export function ruleDecision(rule: Algorithm, o: Outcome<unknown>): Decision {
  return {
    allowed: o.allowed,
    limit: rule.limit,
    remaining: o.remaining,
    retryAfterMs: o.retryAfterMs,
    resetAfterMs: o.resetAfterMs,
    waitMs: o.waitMs,
    rule: rule.name,
  };
}

/** What a policy decision produced: the decision, and the states to store if anything changed. */
export interface PolicyOutcome {
  readonly decision: Decision;
  /**
   * The states to write (one per rule), or undefined when nothing changed. A denial consumes nothing; it
   * only anchors a key never seen or forgotten (see tokenBucket's `initial`).
   */
  readonly states: unknown[] | undefined;
  readonly ttlMs: number;
}

/**
 * Decides a request against every rule at once: allowed only if every rule allows, and a denial consumes
 * from no rule. Policies do not reserve (a wait granted by one rule would let another's later grants bunch
 * up), so waiting callers retry instead. The reported numbers come from the tightest rule.
 */
export function decidePolicy(
  rules: readonly Algorithm[],
  states: readonly unknown[] | undefined,
  nowMs: number,
  permits: number,
): PolicyOutcome {
  const outcomes = rules.map((rule, i) => rule.consume(states?.[i], nowMs, permits, 0));
  const allowed = outcomes.every((o) => o.allowed);
  let tightest = 0;
  const statuses: RuleStatus[] = outcomes.map((o, i) => {
    const rule = rules[i] as Algorithm;
    // On a denial nothing was consumed, so a rule that would have allowed still has its permits.
    const remaining = !allowed && o.allowed ? o.remaining + permits : o.remaining;
    return { name: rule.name, limit: rule.limit, windowMs: rule.windowMs, remaining, resetAfterMs: o.resetAfterMs, allowed: o.allowed };
  });
  for (let i = 1; i < outcomes.length; i++) {
    const best = outcomes[tightest] as Outcome<unknown>;
    const o = outcomes[i] as Outcome<unknown>;
    const tighter = allowed
      ? (statuses[i] as RuleStatus).remaining < (statuses[tightest] as RuleStatus).remaining
      : o.retryAfterMs > best.retryAfterMs;
    if (tighter) tightest = i;
  }
  const top = statuses[tightest] as RuleStatus;
  const decision: Decision = {
    allowed,
    limit: top.limit,
    remaining: top.remaining,
    // Every rule must allow at the retry time, so wait for the slowest.
    retryAfterMs: allowed ? 0 : Math.max(...outcomes.map((o) => o.retryAfterMs)),
    resetAfterMs: Math.max(...outcomes.map((o) => o.resetAfterMs)),
    waitMs: 0,
    rule: top.name,
    rules: statuses,
  };
  const ttlMs = Math.max(...outcomes.map((o) => o.ttlMs));
  if (allowed) return { decision, states: outcomes.map((o) => o.state), ttlMs };
  const kept = outcomes.map((o, i) => (o.allowed ? states?.[i] : o.state));
  const anchored = kept.some((state, i) => state !== states?.[i]);
  return { decision, states: anchored ? kept : undefined, ttlMs };
}
