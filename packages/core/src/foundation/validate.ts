import { SluiceRangeError, SluiceTypeError } from './errors.js';

/**
 * Renders a bad value for an error message without dumping a 10 KB string or throwing on a symbol.
 * @example
 * throw new SluiceTypeError('limit', value, `limit must be a number, got ${describeValue(value)}`)
 */
export function describe(value: unknown): string {
  if (typeof value === 'string') {
    return value.length > 40 ? `a string of length ${value.length}` : JSON.stringify(value);
  }
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null) return 'null';
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  return String(value);
}

function requireNumber(name: string, value: unknown, expected: string): number {
  if (typeof value !== 'number') {
    throw new SluiceTypeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  }
  return value;
}

/**
 * A finite number > 0 (rates, windows, capacities of fractional kinds).
 * @example
 * const timeoutMs = positiveFinite('timeoutMs', options.timeoutMs)
 */
export function positiveFinite(name: string, value: unknown): number {
  const expected = 'a finite number > 0';
  const n = requireNumber(name, value, expected);
  if (!(n > 0) || n === Infinity)
    throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  return n;
}

/**
 * The longest period a rule may span (a window, the time one permit takes to come back, a bucket's full
 * refill): about 317 years. Past it, times stop being representable to the millisecond next to epoch-scale
 * timestamps, and retry times turn into numbers no header can carry (`1e+300`).
 */
export const MAX_PERIOD_MS = 1e13;

/**
 * Checks that a rule's derived period (`periodMs`, computed from the option `name` = `value`) fits in
 * MAX_PERIOD_MS, naming the option and what the period is.
 */
export function representablePeriod(name: string, value: number, periodMs: number, what: string): void {
  if (!(periodMs <= MAX_PERIOD_MS)) {
    throw new SluiceRangeError(
      name,
      value,
      `${name} = ${describe(value)} makes ${what} ${describe(periodMs)} ms, more than the ${MAX_PERIOD_MS} ms ` +
        `(about 317 years) a rule may span`,
    );
  }
}

/**
 * A duration handed to a host timer: finite, > 0, and at most 2^31 - 1 ms (what setTimeout can wait).
 * @example
 * const timeoutMs = timerDuration('timeoutMs', options.timeoutMs ?? 50)
 */
export function timerDuration(name: string, value: unknown): number {
  const ms = positiveFinite(name, value);
  if (ms > 2 ** 31 - 1) {
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be at most ${2 ** 31 - 1} ms (what a timer can wait), got ${describe(value)}`,
    );
  }
  return ms;
}

/** A number > 0 that may be Infinity (Guava's infinite rate). */
export function positiveOrInfinite(name: string, value: unknown): number {
  const expected = 'a number > 0 (Infinity allowed)';
  const n = requireNumber(name, value, expected);
  if (!(n > 0)) throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  return n;
}

/** A finite number >= 0. */
export function nonNegativeFinite(name: string, value: unknown): number {
  const expected = 'a finite number >= 0';
  const n = requireNumber(name, value, expected);
  if (!(n >= 0) || n === Infinity)
    throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  return n;
}

/** A number >= 0 that may be Infinity (a timeout that never expires). */
export function nonNegativeOrInfinite(name: string, value: unknown): number {
  const expected = 'a number >= 0 (Infinity allowed)';
  const n = requireNumber(name, value, expected);
  if (!(n >= 0)) throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  return n;
}

/**
 * A whole number of ms in [min, max] (an interval of background work), or a SluiceRangeError naming it.
 * @example
 * intervalMs('limitedKeys.flushMs', 5_000, 100, 60_000) // 5000
 */
export function intervalMs(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be a whole number of ms from ${min} to ${max}, got ${describe(value)}`,
    );
  return value;
}

/**
 * A safe integer >= 1 (limits, capacities, permits).
 * @example
 * const maxKeys = positiveInteger('maxKeys', options.maxKeys ?? 10_000)
 */
export function positiveInteger(name: string, value: unknown): number {
  const expected = 'an integer >= 1';
  const n = requireNumber(name, value, expected);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  }
  return n;
}

/** A safe integer >= 0. */
export function nonNegativeInteger(name: string, value: unknown): number {
  const expected = 'an integer >= 0';
  const n = requireNumber(name, value, expected);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  }
  return n;
}

/** The most a waiter's priority may be above or below the default 0. */
export const MAX_PRIORITY = 1_000;

/**
 * A waiter's priority: an integer from -MAX_PRIORITY to MAX_PRIORITY, 0 when not given (higher goes first).
 * @example
 * const priority = priorityValue('priority', options?.priority)
 */
export function priorityValue(name: string, value: unknown): number {
  if (value === undefined) return 0;
  const expected = `an integer from -${MAX_PRIORITY} to ${MAX_PRIORITY}`;
  const n = requireNumber(name, value, expected);
  if (!Number.isSafeInteger(n) || Math.abs(n) > MAX_PRIORITY) {
    throw new SluiceRangeError(name, value, `${name} must be ${expected}, got ${describe(value)}`);
  }
  return n;
}

/**
 * A plain options object (or undefined when every option has a default).
 * @example
 * optionsObject('myStore options', options, true) // a typed error unless a plain object
 */
export function optionsObject<T extends object>(name: string, value: T | undefined, required: boolean): T | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceTypeError(name, value, `${name} must be an options object, got ${describe(value)}`);
  }
  return value;
}

const PREFIX = /^[A-Za-z0-9_.\-:/]{1,100}$/;

/** The namespace of a limiter's keys when it is given no `prefix`. */
export const DEFAULT_PREFIX = 'sluice';

/**
 * A limiter's `prefix`: its namespace in a shared store, 1-100 of `[A-Za-z0-9_.-:/]` (no '{', so a key's
 * hash tag always starts after it).
 */
export function prefixValue(name: string, value: unknown): string {
  if (typeof value !== 'string')
    throw new SluiceTypeError(name, value, `${name} must be a string, got ${describe(value)}`);
  if (!PREFIX.test(value))
    throw new SluiceRangeError(name, value, `${name} must be 1-100 of [A-Za-z0-9_.-:/], got ${describe(value)}`);
  return value;
}

/** The longest key accepted unless a limiter sets `maxKeyLength`. */
export const DEFAULT_MAX_KEY_LENGTH = 512;

/**
 * A rate-limit key: a non-empty string no longer than `maxLength`. An empty key is refused rather than
 * becoming one bucket that every caller without an identity would share by accident.
 */
export function rateLimitKey(value: unknown, maxLength: number): string {
  if (typeof value !== 'string') {
    throw new SluiceTypeError('key', value, `key must be a non-empty string, got ${describe(value)}`);
  }
  if (value.length === 0) throw new SluiceRangeError('key', value, 'key must be a non-empty string, got ""');
  if (value.length > maxLength) {
    throw new SluiceRangeError('key', value, `key must be at most ${maxLength} characters, got ${value.length}`);
  }
  return value;
}

/** An optional AbortSignal option. */
export function optionalSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof AbortSignal)) {
    throw new SluiceTypeError('signal', value, `signal must be an AbortSignal, got ${describe(value)}`);
  }
  return value;
}
