import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import type { Engine, EngineRules } from './engine.js';
import {
  adjustmentValue,
  configRecordValue,
  engineAsks,
  engineRules,
  engineTime,
  heartbeatValue,
  leaseAskValue,
  listenerValue,
  stringValue,
  versionValue,
} from './engine-input.js';

function isSluiceError(error: unknown): error is Error {
  return error instanceof SluiceError || error instanceof SluiceTypeError || error instanceof SluiceRangeError;
}

/**
 * Runs one engine call as the contract says: a bad input rejects with a typed error naming the method (never
 * a synchronous throw), and the engine's own answer passes through.
 */
export function engineCall<T>(method: string, body: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(body());
  } catch (error) {
    // Named even when the message starts with the method's name (`adjustment.ms` begins with `adjust`).
    if (isSluiceError(error) && !error.message.startsWith(`${method}: `)) error.message = `${method}: ${error.message}`;
    return Promise.reject(error);
  }
}

/** A rules object as it was checked: its contents then, and what the check made of them. */
interface CheckedRules {
  readonly prefix: unknown;
  readonly version: unknown;
  readonly rules: readonly unknown[];
  readonly states: readonly unknown[];
  readonly checked: ReturnType<typeof engineRules>;
}

/** True when `rules` holds what it held when it was checked (a caller may change its object between calls). */
function unchanged(kept: CheckedRules, rules: Partial<EngineRules>): boolean {
  const now = rules.rules;
  const states = rules.states;
  if (kept.prefix !== rules.prefix || kept.version !== rules.version) return false;
  if (!Array.isArray(now) || !Array.isArray(states) || now.length !== kept.rules.length) return false;
  if (states.length !== kept.states.length) return false;
  for (let i = 0; i < now.length; i++) if (now[i] !== kept.rules[i] || states[i] !== kept.states[i]) return false;
  return true;
}

/**
 * `rules` checked (engineRules), once per object while its contents stay: exact mode asks one decision per
 * call under one rules object, and its rules were checked when the limiter was made.
 */
function rulesOnce(memo: WeakMap<object, CheckedRules>, rules: EngineRules): ReturnType<typeof engineRules> {
  const kept = typeof rules === 'object' && rules !== null ? memo.get(rules) : undefined;
  if (kept !== undefined && unchanged(kept, rules)) return kept.checked;
  const checked = engineRules(rules);
  memo.set(rules, {
    prefix: rules.prefix,
    version: rules.version,
    rules: [...rules.rules],
    states: [...rules.states],
    checked,
  });
  return checked;
}

/**
 * `engine` with every input checked first, by the contract's one set of checks (engine-input.ts): an engine
 * built on it is given only checked values (the caller's own `rules` object, checked, so that an engine may
 * keep what it derives from it per object: a batch of one turn travels together), and a call refused changes
 * nothing. memoryEngine is built on it; a backend's engine (Redis, PostgreSQL) wraps its calls with this and
 * adds only its own limits (the characters its keys can hold).
 * @example
 * const engine = checkedEngine(rawRedisEngine) // decide(rules, [{ permits: 0 }]) rejects: SluiceRangeError
 */
export function checkedEngine(engine: Engine): Engine {
  const memo = new WeakMap<object, CheckedRules>();
  return {
    name: engine.name,
    decide: (rules, asks) =>
      engineCall('decide', () => {
        const r = rulesOnce(memo, rules);
        return engine.decide(rules, engineAsks(asks, r.rules));
      }),
    adjust: (rules, key, adjustment, at) =>
      engineCall('adjust', () => {
        const r = engineRules(rules);
        const k = stringValue('key', key, true);
        return engine.adjust(rules, k, adjustmentValue(adjustment, r.rules), engineTime(at));
      }),
    lease: (rules, ask, at) =>
      engineCall('lease', () => {
        const r = engineRules(rules);
        return engine.lease(rules, leaseAskValue(ask, r.rules), engineTime(at));
      }),
    heartbeat: (beat, at) => engineCall('heartbeat', () => engine.heartbeat(heartbeatValue(beat), engineTime(at))),
    readConfig: (prefix) => engineCall('readConfig', () => engine.readConfig(stringValue('prefix', prefix))),
    writeConfig: (prefix, expected, record, key) =>
      engineCall('writeConfig', () =>
        engine.writeConfig(
          stringValue('prefix', prefix),
          versionValue('expected', expected),
          configRecordValue(record),
          key === undefined ? undefined : stringValue('key', key, true),
        ),
      ),
    publish: (channel, message) =>
      engineCall('publish', () =>
        engine.publish(stringValue('channel', channel), stringValue('message', message, true)),
      ),
    subscribe: (channel, listener) =>
      engineCall('subscribe', () => engine.subscribe(stringValue('channel', channel), listenerValue(listener))),
  };
}
