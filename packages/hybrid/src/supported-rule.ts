import { type Algorithm, SluiceRangeError, type Rules } from '@sluice/core';
import { describeValue, normalizeRules } from '@sluice/core/store-kit';


/**
 * The one rule a hybrid limiter enforces. Policies of several rules are refused: a lease or a share of
 * one rule says nothing about another's.
 */
export function supportedRule(mode: 'leasedLimiter' | 'dividedLimiter', algorithm: Rules): Algorithm {
  const rules = normalizeRules(algorithm);
  if (rules.length !== 1) {
    throw new SluiceRangeError('algorithm', algorithm, `${mode} enforces one rule, got a policy of ${rules.length}; use one limiter per rule, or exact mode (@sluice/redis) for policies`);
  }
  const rule = rules[0] as Algorithm;
  // Hybrid modes run the rules whose grants can be split across nodes (the algorithm says so: its lease model).
  if (rule.lease === undefined) {
    throw new SluiceRangeError('algorithm', rule.kind, `${mode} supports tokenBucket, gcra, fixedWindow and slidingWindowCounter, got ${describeValue(rule.kind)}`);
  }
  if (rule.key !== undefined) {
    throw new SluiceRangeError('algorithm', rule.key, `${mode} counts each request against its own key; a rule with its own key option is not supported`);
  }
  return rule;
}
