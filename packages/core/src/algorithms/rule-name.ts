import { SluiceRangeError, SluiceTypeError } from '../errors.js';
import { describe } from '../validate.js';

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
