export { RedisStore } from './redis-store.js';
export type { DecisionEvent, RedisStoreEvents, RedisStoreOptions } from './redis-store.js';
export type { FailMode } from './fail-mode.js';
export { failModeDecision, failModeOption } from './fail-mode.js';
export type { RedisClient } from './connection/connect.js';
export { toConnection } from './connection/connect.js';
export type { RedisConnection, ResetSubscriber, ScriptReply } from './connection/connection.js';
export { bufferReply, runScript } from './script-runner.js';
export { PROBE_INTERVAL_MS, RedisHealth } from './health.js';
export type { HealthOptions } from './health.js';
export { DeadlineError, withDeadline } from './deadline.js';
export { isKeyScopedError } from './reply-errors.js';
export { StartupChecks, commandsOf, preflight } from './preflight.js';
export { algorithmFiles, algorithmScriptName, decideScript, luaDirectory, luaScript, refundScript } from './scripts.js';
export type { LuaFile, LuaScript } from './scripts.js';
export { numArg, refundArgs, ruleArgs } from './rule-args.js';
export { decodeIdentity, encodeIdentity, stateKey } from './key-layout.js';

import { RedisStore, type RedisStoreOptions } from './redis-store.js';

/**
 * Creates a Redis store; see {@link RedisStoreOptions}.
 *
 * @example
 * import { Redis } from 'ioredis'
 * const limiter = createLimiter({ algorithm: fixedWindow({ limit: 100, windowMs: 60_000 }), store: redisStore({ redis: new Redis() }) })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
