import { type Algorithm, SluiceRangeError } from '@sluice/core';
import { describeValue } from '@sluice/core/internal';

/**
 * The one rule a hybrid store enforces for a limiter, checked when the limiter binds it (createLimiter has
 * already refused policies, plans and bans from the store's declared capabilities): a rule whose grants can
 * be split across nodes (the algorithm says so: its lease model), counted against the request's own key.
 */
export function hybridRule(store: 'leasedStore' | 'dividedStore', rule: Algorithm): Algorithm {
  if (rule.lease === undefined) {
    throw new SluiceRangeError(
      'rules',
      rule.kind,
      `${store} supports tokenBucket, gcra, fixedWindow, calendarWindow and slidingWindowCounter, got ${describeValue(rule.kind)}`,
    );
  }
  if (rule.scope !== undefined) {
    throw new SluiceRangeError(
      'rules',
      rule.scope,
      `${store} counts each request against its own key; a rule with a scope of its own is not supported`,
    );
  }
  return rule;
}
