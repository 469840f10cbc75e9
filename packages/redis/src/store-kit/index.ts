/**
 * `@sluice/redis/store-kit`: what a store built on Redis needs beside the public API (`@sluice/hybrid` is
 * built on it): the connection seam every client library is adapted to, the one health machine, the
 * deadline helper, the start-up check, the Lua script registry, the key layout, and exact mode's binding
 * (leased mode decides a key too cold for a lease with it). Users call
 * `redisStore` from the main entry; nothing here is needed to use sluice.
 */
export type { RedisConnection, ResetSubscriber, ScriptReply } from '../connection/connection.js';
export { toConnection } from '../connection/connect.js';
export { bufferReply, runScript } from '../script-runner.js';
export { MAX_PROBE_INTERVAL_MS, PROBE_INTERVAL_MS, RedisHealth } from '../health.js';
export type { HealthOptions } from '../health.js';
export { DeadlineError, withDeadline } from '../deadline.js';
export { isKeyScopedError } from '../reply-errors.js';
export { misconfiguration } from '../misconfiguration.js';
export { StartupChecks, commandsOf, preflight } from '../preflight.js';
export { failModeDecision, failModeOption } from '../fail-mode.js';
export { RedisBinding } from '../redis-binding.js';
export type { BindingContext, BindingParts } from '../redis-binding.js';
export {
  adjustScript,
  algorithmFiles,
  algorithmScriptName,
  blockScript,
  decideOneScript,
  decideScript,
  luaDirectory,
  luaScript,
  semaphoreScript,
} from '../scripts.js';
export type { LuaFile, LuaScript } from '../scripts.js';
export { adjustArgs, numArg, ruleArgs } from '../rule-args.js';
export type { GrantTime } from '../rule-args.js';
export { banKey, decodeIdentity, encodeIdentity, freedChannel, semaphoreKeys, stateKey } from '../key-layout.js';
