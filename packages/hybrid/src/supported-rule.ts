import { type Algorithm, type Rules, SluiceRangeError } from '@sluice/core';
import { describeValue, normalizeRules } from '@sluice/core/store-kit';

/**
 * The one rule a hybrid limiter enforces, from its options. Refused at construction, naming the mode and
 * the control, rather than ignored: policies of several rules (a lease or a share of one rule says nothing
 * about another's), plans (one rule per limiter), and bans (`blockMs`: a ban must hold on every node at
 * every decision, which these modes make without Redis).
 */
export function supportedRule(mode: 'leasedLimiter' | 'dividedLimiter', options: { readonly rules: Rules }): Algorithm {
  const given = options as { rules?: unknown; plans?: unknown; plan?: unknown };
  if (given.plans !== undefined || given.plan !== undefined) {
    throw new SluiceRangeError(
      'plans',
      given.plans ?? given.plan,
      `${mode} cannot honour plans: it enforces one rule; make one ${mode} per plan, or use exact mode ` +
        `(@sluice/redis) with createLimiter({ plans })`,
    );
  }
  const rules = normalizeRules(given.rules);
  if (rules.length !== 1) {
    throw new SluiceRangeError(
      'rules',
      given.rules,
      `${mode} enforces one rule, got a policy of ${rules.length}; use one limiter per rule, or exact mode ` +
        `(@sluice/redis) for policies`,
    );
  }
  const rule = rules[0] as Algorithm;
  // Hybrid modes run the rules whose grants can be split across nodes (the algorithm says so: its lease model).
  if (rule.lease === undefined) {
    throw new SluiceRangeError(
      'rules',
      rule.kind,
      `${mode} supports tokenBucket, gcra, fixedWindow and slidingWindowCounter, got ${describeValue(rule.kind)}`,
    );
  }
  if (rule.key !== undefined) {
    throw new SluiceRangeError(
      'rules',
      rule.key,
      `${mode} counts each request against its own key; a rule with its own key option is not supported`,
    );
  }
  if (rule.blockMs > 0) {
    throw new SluiceRangeError(
      'blockMs',
      rule.blockMs,
      `${mode} cannot honour blockMs: a ban must hold on every node at every decision, and this mode decides ` +
        `without asking Redis; use exact mode (@sluice/redis) for bans`,
    );
  }
  return rule;
}
