import { SluiceRangeError, SluiceTypeError } from '../errors.js';
import { describe } from '../validate.js';
import type { RuleKey } from './algorithm.js';

const RULE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** A rule name appears in Redis keys after the last ':', so it is kept to a small safe alphabet. */
export function ruleName(value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw new SluiceTypeError('name', value, `name must be a string, got ${describe(value)}`);
  if (!RULE_NAME.test(value)) {
    throw new SluiceRangeError('name', value, `name must be 1-64 of [A-Za-z0-9_.-], got ${describe(value)}`);
  }
  return value;
}

/** Validates a rule's `key` option (see RuleOptions.key). */
export function ruleKey(value: unknown): RuleKey | undefined {
  if (value === undefined || typeof value === 'function') return value as RuleKey | undefined;
  if (typeof value !== 'string') throw new SluiceTypeError('key', value, `key must be a string or a function, got ${describe(value)}`);
  if (value.length === 0 || value.length > 512) {
    throw new SluiceRangeError('key', value, `key must be 1-512 characters, got ${value.length}`);
  }
  return value;
}

/** The identity a rule counts `requestKey` against. A derived key must be a non-empty string. */
export function identityOf(rule: { readonly key?: RuleKey; readonly name: string }, requestKey: string): string {
  const key = rule.key;
  if (key === undefined) return requestKey;
  if (typeof key === 'string') return key;
  const derived = key(requestKey);
  if (typeof derived !== 'string' || derived.length === 0) {
    throw new SluiceTypeError('key', derived, `rule ${JSON.stringify(rule.name)}: its key function must return a non-empty string, got ${describe(derived)}`);
  }
  return derived;
}
