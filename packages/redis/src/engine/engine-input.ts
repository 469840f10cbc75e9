import { type Algorithm, SluiceRangeError, SluiceTypeError } from '@sluice/core';
import type {
  Adjustment,
  ConfigRecord,
  EngineAsk,
  EngineRules,
  EngineTime,
  Heartbeat,
  LeaseAsk,
} from '@sluice/core/engine';
import { describeValue } from '@sluice/core/store-kit';

/**
 * The checks of what an engine call is given, made before anything is sent: a call refused here consumes
 * nothing. Each throws SluiceTypeError (the wrong type) or SluiceRangeError (out of range), naming the argument.
 */

const PREFIX = /^[A-Za-z0-9_.\-:/]{1,100}$/;
const NODE = /^[A-Za-z0-9_.:-]{1,100}$/;

function typeError(name: string, value: unknown, what: string): SluiceTypeError {
  return new SluiceTypeError(name, value, `${name} must be ${what}, got ${describeValue(value)}`);
}

function rangeError(name: string, value: unknown, what: string): SluiceRangeError {
  return new SluiceRangeError(name, value, `${name} must be ${what}, got ${describeValue(value)}`);
}

function numberIn(name: string, value: unknown, ok: (x: number) => boolean, what: string): number {
  if (typeof value !== 'number') throw typeError(name, value, 'a number');
  if (!ok(value)) throw rangeError(name, value, what);
  return value;
}

const nonNegative = (name: string, value: unknown) =>
  numberIn(name, value, (x) => x >= 0 && Number.isFinite(x), 'a finite number >= 0');
const positive = (name: string, value: unknown) =>
  numberIn(name, value, (x) => x > 0 && Number.isFinite(x), 'a finite number > 0');

/** A limiter's prefix, as the key layout takes it (1-100 of [A-Za-z0-9_.-:/]). */
export function checkPrefix(name: string, value: unknown): string {
  if (typeof value !== 'string') throw typeError(name, value, 'a string');
  if (!PREFIX.test(value)) throw rangeError(name, value, '1-100 of [A-Za-z0-9_.-:/]');
  return value;
}

function checkString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw typeError(name, value, 'a non-empty string');
  return value;
}

function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw typeError(name, value, 'a boolean');
  return value;
}

function checkObject(name: string, value: unknown): void {
  if (typeof value !== 'object' || value === null) throw typeError(name, value, 'an object');
}

/** The version a caller decides under, or a record's: a whole number >= 1. */
export function checkVersion(name: string, value: unknown): number {
  return numberIn(name, value, (x) => Number.isSafeInteger(x) && x >= 1, 'a whole number >= 1');
}

/** One limiter's rules: a prefix, one state name per rule, and an optional configuration version. */
export function checkRules(rules: EngineRules): void {
  checkObject('rules', rules);
  checkPrefix('rules.prefix', rules.prefix);
  if (!Array.isArray(rules.rules) || rules.rules.length === 0)
    throw typeError('rules.rules', rules.rules, 'a non-empty array of rules');
  for (const [r, rule] of rules.rules.entries()) {
    const candidate = rule as Partial<Algorithm> | null;
    if (typeof candidate !== 'object' || candidate === null || typeof candidate.kind !== 'string')
      throw typeError(`rules.rules[${r}]`, rule, 'a rule (an Algorithm)');
  }
  if (!Array.isArray(rules.states) || rules.states.length !== rules.rules.length)
    throw typeError('rules.states', rules.states, `an array of ${rules.rules.length} state names`);
  for (const [r, state] of rules.states.entries()) checkString(`rules.states[${r}]`, state);
  if (rules.version !== undefined) checkVersion('rules.version', rules.version);
}

/** Whose clock: undefined (the server's), or a finite time in ms. */
export function checkAt(at: EngineTime, name = 'at'): void {
  if (at !== undefined) numberIn(name, at, Number.isFinite, 'a finite time in ms, or undefined');
}

/** Permits: one count of every rule, or each rule's own by rule name (each a finite number >= 0). */
function checkPermits(name: string, permits: unknown, rules: readonly Algorithm[]): void {
  if (typeof permits === 'number') {
    nonNegative(name, permits);
    return;
  }
  checkObject(name, permits);
  const names = new Set(rules.map((rule) => rule.name));
  for (const [rule, count] of Object.entries(permits as object)) {
    if (!names.has(rule))
      throw rangeError(`${name}.${rule}`, count, `the name of one of the rules (${[...names].join(', ')})`);
    nonNegative(`${name}.${rule}`, count);
  }
}

/** A decide batch. */
export function checkAsks(asks: readonly EngineAsk[], rules: readonly Algorithm[]): void {
  if (!Array.isArray(asks)) throw typeError('asks', asks, 'an array');
  for (const [q, ask] of asks.entries()) {
    checkObject(`asks[${q}]`, ask);
    checkString(`asks[${q}].key`, ask.key);
    checkPermits(`asks[${q}].permits`, ask.permits, rules);
    numberIn(`asks[${q}].maxWaitMs`, ask.maxWaitMs, (x) => x >= 0, 'a number >= 0');
    checkBoolean(`asks[${q}].peek`, ask.peek);
    checkAt(ask.at, `asks[${q}].at`);
  }
}

/** One adjustment of one key. */
export function checkAdjustment(key: string, adjustment: Adjustment, rules: readonly Algorithm[]): void {
  checkString('key', key);
  checkObject('adjustment', adjustment);
  switch (adjustment.op) {
    case 'refund':
      checkPermits('adjustment.permits', adjustment.permits, rules);
      if (!Number.isNaN(adjustment.grantedMsAgo)) nonNegative('adjustment.grantedMsAgo', adjustment.grantedMsAgo);
      return;
    case 'penalize':
      checkPermits('adjustment.permits', adjustment.permits, rules);
      return;
    case 'block':
      positive('adjustment.ms', adjustment.ms);
      return;
    case 'reset':
    case 'unblock':
      return;
    default:
      throw rangeError(
        'adjustment.op',
        (adjustment as { op: unknown }).op,
        "'refund', 'penalize', 'reset', 'block' or 'unblock'",
      );
  }
}

/** One lease: exactly one rule, which its algorithm can lease. */
export function checkLease(rules: EngineRules, ask: LeaseAsk): void {
  if (rules.rules.length !== 1) throw rangeError('rules.rules', rules.rules, 'exactly one rule for a lease');
  const rule = rules.rules[0] as Algorithm;
  if (rule.lease === undefined) throw rangeError('rules.rules[0]', rule.kind, 'a rule whose algorithm can be leased');
  checkObject('ask', ask);
  checkString('ask.key', ask.key);
  numberIn('ask.want', ask.want, (x) => Number.isSafeInteger(x) && x >= 1, 'a whole number >= 1');
  checkNode('ask.node', ask.node);
  positive('ask.liveMs', ask.liveMs);
  if (ask.hoardingDivisor !== undefined) positive('ask.hoardingDivisor', ask.hoardingDivisor);
  checkBoolean('ask.register', ask.register);
}

function checkNode(name: string, value: unknown): void {
  if (typeof value !== 'string') throw typeError(name, value, 'a string');
  if (!NODE.test(value)) throw rangeError(name, value, '1-100 of [A-Za-z0-9_.:-]');
}

/** One heartbeat. */
export function checkHeartbeat(beat: Heartbeat): void {
  checkObject('beat', beat);
  checkPrefix('beat.prefix', beat.prefix);
  checkPrefix('beat.fleet', beat.fleet);
  checkNode('beat.node', beat.node);
  checkBoolean('beat.leaving', beat.leaving);
  positive('beat.liveMs', beat.liveMs);
  positive('beat.intervalMs', beat.intervalMs);
  positive('beat.limit', beat.limit);
  positive('beat.burst', beat.burst);
  nonNegative('beat.demand', beat.demand);
  if (beat.division !== 'equal' && beat.division !== 'demand')
    throw rangeError('beat.division', beat.division, "'equal' or 'demand'");
  numberIn('beat.divided', beat.divided, (x) => x > 0 && x <= 1, 'a fraction in (0, 1]');
  checkBoolean('beat.windowed', beat.windowed);
  nonNegative('beat.minLocal', beat.minLocal);
  if (beat.lastAt !== undefined) numberIn('beat.lastAt', beat.lastAt, Number.isFinite, 'a finite time in ms');
  numberIn('beat.knownNodes', beat.knownNodes, (x) => Number.isSafeInteger(x) && x >= 0, 'a whole number >= 0');
  numberIn('beat.assumedNodes', beat.assumedNodes, (x) => Number.isSafeInteger(x) && x >= 1, 'a whole number >= 1');
  checkVersion('beat.version', beat.version);
}

/** A configuration record to store. */
export function checkRecord(expected: number, record: ConfigRecord): void {
  checkVersion('expected', expected);
  checkObject('record', record);
  checkVersion('record.version', record.version);
  if (typeof record.text !== 'string') throw typeError('record.text', record.text, 'a string');
}

/** A channel's name. */
export function checkChannel(channel: string): void {
  checkString('channel', channel);
}

/** A message to publish: any string. */
export function checkMessage(message: string): void {
  if (typeof message !== 'string') throw typeError('message', message, 'a string');
}

/** What a subscription calls with each message. */
export function checkListener(listener: (message: string) => void): void {
  if (typeof listener !== 'function') throw typeError('listener', listener, 'a function');
}
