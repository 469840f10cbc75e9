import { SluiceRangeError, SluiceTypeError } from '@sluice/core';
import { describeValue } from '@sluice/core/internal';

/**
 * What Redis's key layout adds to the contract's checks (core's checkedEngine makes those): a prefix, a fleet
 * name and a node id are parts of key names and hash tags, so they hold only characters that cannot break one.
 * A call refused here consumes nothing.
 */

const PREFIX = /^[A-Za-z0-9_.\-:/]{1,100}$/;
const NODE = /^[A-Za-z0-9_.:-]{1,100}$/;

function typeError(name: string, value: unknown, what: string): SluiceTypeError {
  return new SluiceTypeError(name, value, `${name} must be ${what}, got ${describeValue(value)}`);
}

function rangeError(name: string, value: unknown, what: string): SluiceRangeError {
  return new SluiceRangeError(name, value, `${name} must be ${what}, got ${describeValue(value)}`);
}

/** A limiter's prefix, as the key layout takes it (1-100 of [A-Za-z0-9_.-:/]). */
export function checkPrefix(name: string, value: unknown): string {
  if (typeof value !== 'string') throw typeError(name, value, 'a string');
  if (!PREFIX.test(value)) throw rangeError(name, value, '1-100 of [A-Za-z0-9_.-:/]');
  return value;
}

/** A node id: a part of the lessees' and the fleet's entries. */
export function checkNode(name: string, value: unknown): void {
  if (typeof value !== 'string') throw typeError(name, value, 'a string');
  if (!NODE.test(value)) throw rangeError(name, value, '1-100 of [A-Za-z0-9_.:-]');
}

/**
 * The rules' state names: a name starting with '~' is one of the key layout's own parts (stateKey keeps it as
 * it is: the ban is `~b` beside the states), so a caller's name never starts with it.
 */
export function checkStates(name: string, states: readonly string[]): void {
  states.forEach((state, i) => {
    if (state.startsWith('~'))
      throw rangeError(`${name}[${i}]`, state, "a state name not starting with '~' (the key layout's own parts)");
  });
}
