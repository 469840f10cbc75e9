/**
 * `@sluice/redis/internal`: the parts a store built on Redis is assembled from, shared with `@sluice/hybrid`
 * until leased and divided mode run over the engine contract: not public API, no semver, changed without
 * notice. Users call `redisStore` or `redisEngine` from the main entry and need nothing here.
 *
 * What is not Redis's own (the deadline, the health machine, the fail mode, the deny cache, node ids, the
 * shared events and options) is every engine's, in `@sluice/core/internal`; here:
 * - The connection seam every client library is adapted to (`toConnection`, `RedisConnection`).
 * - The options every Redis-backed store shares, as a schema (`REDIS_BACKED_OPTIONS`: `redis` and core's
 *   `ENGINE_BACKED_OPTIONS`).
 * - What the health machine (core's `EngineHealth`) asks of Redis (`redisHealthProbe`).
 * - What a store knows of its fleet (`RedisPresence`).
 * - The start-up check (`StartupChecks`), the Lua script registry, and the key layout.
 *
 * @example
 * import { redisHealthProbe, toConnection } from '@sluice/redis/internal'
 */
export type { RedisConnection, ResetSubscriber, ScriptReply } from '../connection/connection.js';
export { toConnection } from '../connection/connect.js';
export { ChannelListener } from '../connection/channel-listener.js';
/** The event emitter every Redis-backed store extends (the shared events' listener signatures first). */
export { StoreEmitter } from '../store-events.js';
export { DEFAULT_MAX_BATCH, REDIS_BACKED_OPTIONS } from '../options.js';
export type { RedisBackedOptions } from '../options.js';
export { redisHealthProbe } from '../health-probe.js';
export { RedisPresence } from '../fleet/presence.js';
export type { RedisPresenceOptions, TrackedFleet } from '../fleet/presence.js';
export type { TransportOptions } from '../exact/transport.js';
export { StartupChecks } from '../preflight.js';
/** The engine contract on a connection a store already holds (its deadlines the mode's, or its own). */
export { engineOnConnection } from '../engine/redis-engine.js';
export {
  adjustScript,
  algorithmFiles,
  algorithmScriptName,
  exactScripts,
  leaseScript,
  luaScript,
  membershipScript,
  nodeSeenFile,
  presenceScript,
} from '../scripts.js';
export type { LuaFile, LuaScript } from '../scripts.js';
export { bufferReply } from '../script-runner.js';
export { runLease } from '../fleet/lease-call.js';
export { runHeartbeat } from '../fleet/heartbeat-call.js';
export type { FleetSummary, HeartbeatRequest } from '../fleet/heartbeat-call.js';
export type { LeaseCall, LeaseCallReply } from '../fleet/lease-call.js';
export { adjustArgs, ruleArgs } from '../exact/rule-args.js';
export type { GrantTime } from '../exact/rule-args.js';
export {
  decodeIdentity,
  encodeIdentity,
  membershipKeys,
  resetChannel,
  stateKey,
  versionKeyBeside,
} from '../key-layout.js';
export { versionError } from '../reply-errors.js';
/** Limited-keys boards (limiter.topLimited) on Redis: a fleet's counts of the keys its limiters limit. */
export { RedisBoard, RedisBoards } from '../limited-keys-board.js';
/** What a limiter says it runs, for tools that read its state (the CLI). */
export { readDescriptor, writeDescriptor } from '../descriptor.js';
export type { LimiterDescriptor } from '../descriptor.js';
/** Allow and deny lists on Redis: a limiter's entries every node holds. */
export { RedisAccessLists } from '../access-lists.js';
export type { AccessListContext } from '../access-lists.js';
export type { BoardContext } from '../limited-keys-board.js';
export { bySlot } from '../slots.js';
