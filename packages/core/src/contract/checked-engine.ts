import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import type { Engine } from './engine.js';
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
  return {
    name: engine.name,
    decide: (rules, asks) =>
      engineCall('decide', () => {
        const r = engineRules(rules);
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
