import { SluiceRangeError } from '../foundation/errors.js';
import type { OptionNames } from '../foundation/options.js';
import { nonNegativeFinite, representablePeriod } from '../foundation/validate.js';
import type { RuleOptions, RuleScope } from './algorithm.js';
import { ruleName, ruleScope } from './rule-name.js';

/** The names of the options every algorithm takes (RuleOptions), which each factory's list of names spreads. */
export const RULE_OPTIONS: OptionNames<RuleOptions> = { name: true, scope: true, blockMs: true };

/** The options every algorithm takes, validated: what a rule is called, what it counts against (its scope), how it bans. */
export interface CommonRule {
  readonly name: string;
  readonly scope: RuleScope | undefined;
  readonly blockMs: number;
  /** See Algorithm.planName: set only when the rule was given no name. */
  readonly planName: string | undefined;
}

/**
 * Validates the options every algorithm takes (RuleOptions). A rule given no name is called `defaultName`,
 * and `planName` in a limiter's plans (see Algorithm.planName).
 */
export function commonRuleOptions(options: RuleOptions, defaultName: string, planName: string): CommonRule {
  const name = ruleName(options.name, defaultName);
  const scope = ruleScope(options.scope);
  const blockMs = options.blockMs === undefined ? 0 : nonNegativeFinite('blockMs', options.blockMs);
  representablePeriod('blockMs', blockMs, blockMs, 'a block of');
  if (blockMs > 0 && scope !== undefined) {
    // A ban blocks the request's key; a shared rule's denial is not that key's doing.
    throw new SluiceRangeError(
      'blockMs',
      blockMs,
      `blockMs bans the request's own key: rule ${JSON.stringify(name)} is counted against another key (its scope), ` +
        `so it cannot ban`,
    );
  }
  return { name, scope, blockMs, planName: options.name === undefined ? planName : undefined };
}

/** The common options as a factory takes them again: what `share()` passes on to the scaled rule. */
export function ownOptions({ name, scope, blockMs }: CommonRule): RuleOptions {
  return { name, ...(scope === undefined ? {} : { scope }), ...(blockMs === 0 ? {} : { blockMs }) };
}
