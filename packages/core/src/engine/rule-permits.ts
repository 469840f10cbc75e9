import type { Algorithm } from '../algorithms/algorithm.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { describe, nonNegativeInteger, positiveInteger } from '../foundation/validate.js';
import type { Permits, RulePermits } from './store.js';

/**
 * A call's `permits` (tryAcquire, acquire): 1 unless given; an integer >= 1; or each rule's own count by rule
 * name (RulePermits), integers >= 0 of which at least one is >= 1.
 * @example
 * permitsOption(undefined)              // 1
 * permitsOption({ rpm: 1, tpm: 1_200 }) // { rpm: 1, tpm: 1200 }, frozen
 */
export function permitsOption(value: unknown, name = 'permits'): Permits {
  if (value === undefined) return 1;
  if (typeof value === 'number') return positiveInteger(name, value);
  return rulePermitsValue(value, true, name);
}

/**
 * A control's `permits` (refund, penalize): an integer >= 0, or each rule's own count by rule name (RulePermits),
 * integers >= 0.
 * @example
 * adjustPermits({ tpm: 300 }) // { tpm: 300 }: the other rules are left as they are
 */
export function adjustPermits(value: unknown, name = 'permits'): Permits {
  if (typeof value === 'number' || typeof value !== 'object') return nonNegativeInteger(name, value);
  return rulePermitsValue(value, false, name);
}

/** A RulePermits object, checked and copied (frozen): the caller's object may change after the call. */
function rulePermitsValue(value: unknown, needsOne: boolean, name = 'permits'): RulePermits {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be an integer or each rule's count by rule name ({ rpm: 1, tpm: 1200 }), got ${describe(value)}`,
    );
  }
  const entries = Object.entries(value);
  if (entries.length === 0 || (needsOne && entries.every(([, count]) => count === 0))) {
    throw new SluiceRangeError(name, value, `${name} must count at least one permit of a rule, got ${describe(value)}`);
  }
  // No prototype: a rule may be named "constructor" or "toString".
  const counts: Record<string, number> = Object.create(null);
  for (const [rule, count] of entries) counts[rule] = nonNegativeInteger(`${name}.${rule}`, count);
  return Object.freeze(counts);
}

/**
 * Throws unless every rule `permits` names is one of `rules` (a misspelt name would otherwise count nothing
 * against the rule it meant).
 */
export function checkPermitNames(permits: Permits, rules: readonly Algorithm[], argument = 'permits'): void {
  if (typeof permits === 'number') return;
  for (const name of Object.keys(permits)) {
    if (!rules.some((rule) => rule.name === name)) {
      throw new SluiceRangeError(
        `${argument}.${name}`,
        name,
        `${argument} names rule ${JSON.stringify(name)}, which is not one of the key's rules ` +
          `(${rules.map((rule) => JSON.stringify(rule.name)).join(', ')})`,
      );
    }
  }
}

/** True when `permits` counts nothing (a control of 0). */
export function countsNothing(permits: Permits): boolean {
  return typeof permits === 'number' ? permits === 0 : Object.values(permits).every((count) => count === 0);
}

/** `permits` as a message says it: "3 permits", or "{ rpm: 1, tpm: 1200 }". */
export function describePermits(permits: Permits): string {
  if (typeof permits === 'number') return `${permits} permits`;
  return `{ ${Object.entries(permits)
    .map(([name, count]) => `${name}: ${count}`)
    .join(', ')} }`;
}
