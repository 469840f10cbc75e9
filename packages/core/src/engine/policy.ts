import type { Algorithm, Outcome } from '../algorithms/algorithm.js';
import type { Decision, RuleStatus } from '../foundation/decision.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';
import { type Permits, permitsOfRule } from './store.js';

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
 * Checks a limiter's `rules` option and returns its rules as a list. Rules of one policy need
 * distinct names, because each keeps its own state under its name.
 * @example
 * const rules = normalizeRules(options.rules) // one rule or a policy, checked
 */
export function normalizeRules(value: unknown, option = 'rules'): readonly Algorithm[] {
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (list.length === 0) throw new SluiceRangeError(option, value, `${option} must list at least one rule, got []`);
  const seen = new Set<string>();
  return list.map((rule, i) => {
    if (!isAlgorithm(rule)) {
      const where = Array.isArray(value) ? `${option}[${i}]` : option;
      throw new SluiceTypeError(
        where,
        rule,
        `${where} must be a rule such as tokenBucket({...}), got ${describe(rule)}`,
      );
    }
    if (seen.has(rule.name)) {
      throw new SluiceRangeError(
        `${option}[${i}].name`,
        rule.name,
        `rule names in a policy must be unique; give one of the rules named ${JSON.stringify(rule.name)} a name`,
      );
    }
    seen.add(rule.name);
    return rule;
  });
}

/**
 * Builds the public Decision of a single rule.
 * @example
 * const out = rule.consume(state, now, permits, 0)
 * return ruleDecision(rule, out)
 */
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
   * only anchors a key never seen or forgotten (see tokenBucket's `initialPermits`).
   */
  readonly states: unknown[] | undefined;
  readonly ttlMs: number;
  /** Each rule's own answer, in rule order (what a ban's decision is built from). */
  readonly verdicts: readonly RuleVerdict[];
}

/** One rule's own answer within a policy decision, before the policy's outcome is known. */
export interface RuleVerdict {
  readonly allowed: boolean;
  /** Permits the rule has left had it granted (a rule that would allow reports what it would leave). */
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetAfterMs: number;
}

/**
 * The one merge of a policy's per-rule verdicts into its Decision, used by the memory store, the Redis
 * script's replies and policies decided slot by slot on a Cluster. Allowed only if every rule allows. When
 * nothing was taken (a denial, or a peek), a rule that would have allowed still has its permits. The
 * reported numbers come from the tightest rule: when denied, the one whose retryAfterMs is longest (every
 * rule must allow at the retry time, so the caller waits for the slowest); when allowed, the one with the
 * fewest permits left.
 * @example
 * const decision = mergePolicy(rules, verdicts, permits) // allowed only if every rule allows
 */
export function mergePolicy(
  rules: readonly Algorithm[],
  verdicts: readonly RuleVerdict[],
  permits: Permits,
  peek = false,
): Decision {
  const allowed = verdicts.every((v) => v.allowed);
  const tookNothing = !allowed || peek;
  let tightest = 0;
  let retryAfterMs = 0;
  let resetAfterMs = 0;
  const statuses: RuleStatus[] = verdicts.map((v, i) => {
    const rule = rules[i] as Algorithm;
    const remaining = tookNothing && v.allowed ? v.remaining + permitsOfRule(permits, rule) : v.remaining;
    if (!allowed) retryAfterMs = Math.max(retryAfterMs, v.retryAfterMs);
    resetAfterMs = Math.max(resetAfterMs, v.resetAfterMs);
    return {
      name: rule.name,
      limit: rule.limit,
      windowMs: rule.windowMs,
      remaining,
      resetAfterMs: v.resetAfterMs,
      allowed: v.allowed,
    };
  });
  for (let i = 1; i < verdicts.length; i++) {
    const tighter = allowed
      ? (statuses[i] as RuleStatus).remaining < (statuses[tightest] as RuleStatus).remaining
      : (verdicts[i] as RuleVerdict).retryAfterMs > (verdicts[tightest] as RuleVerdict).retryAfterMs;
    if (tighter) tightest = i;
  }
  const top = statuses[tightest] as RuleStatus;
  return {
    allowed,
    limit: top.limit,
    remaining: top.remaining,
    retryAfterMs,
    resetAfterMs,
    waitMs: 0,
    rule: top.name,
    rules: statuses,
  };
}

/**
 * Decides a request against every rule at once (the same permits of each, or each rule's own: see
 * Permits): allowed only if every rule allows, and a denial consumes from no rule. Policies do not reserve (a wait granted by one rule would let another's later grants bunch
 * up), so waiting callers retry instead. The reported numbers come from the tightest rule (mergePolicy).
 * @example
 * const { decision, states } = decidePolicy(rules, states, now, permits, maxWaitMs)
 */
export function decidePolicy(
  rules: readonly Algorithm[],
  states: readonly unknown[] | undefined,
  nowMs: number,
  permits: Permits,
): PolicyOutcome {
  const outcomes = rules.map((rule, i) => rule.consume(states?.[i], nowMs, permitsOfRule(permits, rule), 0));
  const decision = mergePolicy(rules, outcomes, permits);
  const allowed = decision.allowed;
  const ttlMs = Math.max(...outcomes.map((o) => o.ttlMs));
  if (allowed) return { decision, states: outcomes.map((o) => o.state), ttlMs, verdicts: outcomes };
  // A rule that allowed keeps its state; one that refused may have anchored a never-seen key. A denial deletes
  // nothing, even a state a refusing rule takes as forgotten (another plan may read it).
  const kept = outcomes.map((o, i) => (o.allowed || o.state === undefined ? states?.[i] : o.state));
  const anchored = kept.some((state, i) => state !== states?.[i]);
  return { decision, states: anchored ? kept : undefined, ttlMs, verdicts: outcomes };
}
