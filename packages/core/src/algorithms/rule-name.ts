import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';
import type { RuleScope } from './algorithm.js';

const RULE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** A number as a name part: `0.5`, `1e-7`, `1e21` (no `+`, which a name cannot hold). */
function numberPart(n: number): string {
  return String(n).replace('+', '');
}

/** A period as a name part, in the largest unit that divides it: `10s`, `15m`, `1h`, `1d`, `1500ms`. */
export function periodPart(ms: number): string {
  const units: Array<[number, string]> = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'm'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${numberPart(ms)}ms`;
}

/** A rate as a name part: `10ps` (per second). */
export function ratePart(perSecond: number): string {
  return `${numberPart(perSecond)}ps`;
}

/** FNV-1a, 32 bits: a short stable digest for a default name too long to spell out. */
function digest(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

/**
 * The name a rule gets when it is given none: its kind and every parameter that shapes its state
 * (`fw-200-per-10s`, `tb-100-10ps`). Rules that differ get different names, so two limiters that share a
 * store (across processes too) and leave prefix and names at their defaults never read each other's state,
 * and a policy of windows that differ needs no names.
 */
export function defaultRuleName(short: string, parts: ReadonlyArray<string | number>): string {
  const text = [short, ...parts.map((p) => (typeof p === 'number' ? numberPart(p) : p))].join('-');
  return RULE_NAME.test(text) ? text : `${short}-${digest(text)}`;
}

/** A rule name appears in Redis keys after the last ':', so it is kept to a small safe alphabet. */
export function ruleName(value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string')
    throw new SluiceTypeError('name', value, `name must be a string, got ${describe(value)}`);
  if (!RULE_NAME.test(value)) {
    throw new SluiceRangeError('name', value, `name must be 1-64 of [A-Za-z0-9_.-], got ${describe(value)}`);
  }
  return value;
}

/**
 * The name a rule's state is kept under, in every store and mode (memory cells, Redis keys, leases, divided
 * mode's reserve, live limits' generations): its name and its state format (Algorithm.stateFormat: its kind
 * and every parameter that changes what its state means, such as a window's length or a calendar's period and
 * zone). Two rules read each other's state exactly when both are equal: two versions of a service that keep
 * one name under another kind (a token bucket that became a leaky bucket during a rolling deploy) count apart
 * and never read each other's state as their own, while a rule whose limit or rate changes keeps its state.
 * A name holds no '/', so the join is one-to-one.
 * @example
 * stateName(tokenBucket({ name: 'api', capacity: 10, refillPerSecond: 1 })) // 'api/tokenBucket'
 */
export function stateName(rule: { readonly name: string; readonly stateFormat: string }): string {
  return `${rule.name}/${rule.stateFormat}`;
}

/** Validates a rule's `scope` option (see RuleOptions.scope). */
export function ruleScope(value: unknown): RuleScope | undefined {
  if (value === undefined || typeof value === 'function') return value as RuleScope | undefined;
  if (typeof value !== 'string')
    throw new SluiceTypeError('scope', value, `scope must be a string or a function, got ${describe(value)}`);
  if (value.length === 0 || value.length > 512) {
    throw new SluiceRangeError('scope', value, `scope must be 1-512 characters, got ${value.length}`);
  }
  return value;
}

/**
 * The identity a rule counts `requestKey` against (its scope's). A derived one must be a non-empty string.
 * @example
 * identityOf(fixedWindow({ limit: 1000, windowMs: 1000, scope: 'all' }), 'user:1') // 'all'
 */
export function identityOf(
  rule: { readonly scope?: RuleScope | undefined; readonly name: string },
  requestKey: string,
): string {
  const scope = rule.scope;
  if (scope === undefined) return requestKey;
  if (typeof scope === 'string') return scope;
  const derived = scope(requestKey);
  if (typeof derived !== 'string' || derived.length === 0) {
    throw new SluiceTypeError(
      'scope',
      derived,
      `rule ${JSON.stringify(rule.name)}: its scope function must return a non-empty string, got ${describe(derived)}`,
    );
  }
  return derived;
}
