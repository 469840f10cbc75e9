import { type Clock, SluiceRangeError, systemClock } from '@sluice/core';
import {
  booleanValue,
  clockValue,
  describeValue,
  functionValue,
  option,
  optional,
  positiveFinite,
  positiveInteger,
  required,
  type SchemaOf,
  timerDuration,
  DEFAULT_MAX_KEYS,
} from '@sluice/core/store-kit';
import { toConnection } from './connection/connect.js';
import type { RedisConnection } from './connection/connection.js';
import { DEFAULT_TIMEOUT_MS } from './deadline.js';
import type { DecisionEvent } from './exact/exact-binding.js';
import { DEFAULT_FAIL_MODE, type FailMode, failModeValue } from './fleet/fail-mode.js';
import type { RedisClient } from './connection/connect.js';
import type { RedisStoreOptions } from './redis-store.js';

/** How often a Redis-backed store tells Redis this node is alive, unless its `heartbeatMs` says otherwise. */
export const DEFAULT_HEARTBEAT_MS = 1_000;

/** How many nodes a limit is taken to be shared by until Redis has said, unless `assumedNodes` says otherwise. */
export const DEFAULT_ASSUMED_NODES = 10;

/** The most decisions one script call carries unless redisStore's `maxBatch` says otherwise (measured best: 32-64). */
export const DEFAULT_MAX_BATCH = 64;

/** With `clock: 'client'`, how far a decision time may be from Redis TIME unless `maxClockSkewMs` says otherwise. */
export const DEFAULT_CLIENT_SKEW_MS = 1_000;

/**
 * Where a Redis-backed store's decision time comes from: `'server'`, Redis TIME (one clock for the whole
 * fleet); `'client'`, this process's monotonic clock; or a Clock (a ManualClock in tests and simulations).
 */
export type ClockOption = 'server' | 'client' | Clock;

const NODE_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

/** A `nodeId` option: 1-100 of `[A-Za-z0-9_.:-]`. */
function nodeIdValue(name: string, value: unknown): string {
  if (typeof value !== 'string' || !NODE_ID.test(value)) {
    throw new SluiceRangeError(name, value, `${name} must be 1-100 of [A-Za-z0-9_.:-], got ${describeValue(value)}`);
  }
  return value;
}

/** A `clock` option of a Redis-backed store. */
function clockOptionValue(name: string, value: unknown): ClockOption {
  if (value === 'server' || value === 'client') return value;
  if (typeof value === 'string')
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be 'server', 'client' or a Clock, got ${describeValue(value)}`,
    );
  return clockValue(name, value);
}

/**
 * The options every Redis-backed store takes (redisStore, leasedStore, dividedStore): one name, one meaning
 * and one default each, on every store (see docs/options.md).
 */
export interface RedisBackedOptions {
  /**
   * Your Redis client, as you have it: ioredis 5/6 (`new Redis()`, `new Cluster()`), iovalkey, node-redis 5/6
   * (`createClient()`, `createCluster()`, connected or connecting) or Valkey GLIDE 2 (`GlideClient`,
   * `GlideClusterClient`). The store never closes it.
   */
  redis: RedisClient;
  /**
   * Where decision time comes from: `'server'`, Redis TIME, one clock for the whole fleet; `'client'`, this
   * process's monotonic clock; or a Clock (a ManualClock in tests) to decide on it. (A divided store decides on
   * this process's clock, or the Clock given, and heartbeats on this one.)
   * @default 'server'
   */
  clock?: ClockOption | undefined;
  /**
   * Longest a decision or a control waits for Redis before the fail mode decides instead (a divided store: its
   * start-up check and its last call at close; heartbeats wait up to heartbeatMs).
   * @default 50
   */
  timeoutMs?: number | undefined;
  /**
   * The most keys the store keeps in this process: its fail mode's states (over every limiter), deny caches,
   * leases, a divided store's shares.
   * @default 100_000
   */
  maxKeys?: number | undefined;
  /**
   * This node's name in its limiters' fleets (and among a leased key's lessees, in a divided membership). Give
   * each process its own: one taken by another live process is found at a heartbeat, and this one goes on under
   * the id with a random suffix (warning SLUICE_NODE_ID_REUSED).
   * @default a random UUID
   */
  nodeId?: string | undefined;
  /**
   * How often this node tells Redis it is alive under each limiter's prefix: the fleet a fail mode's share
   * (failMode 'local') or a divided share is counted from. One call per Cluster slot for all of a store's
   * limiters, O(log N) for Redis whatever the fleet's size N; a node unseen for three heartbeats no longer
   * counts.
   * @default 1000
   */
  heartbeatMs?: number | undefined;
  /**
   * The nodes a limit is taken to be shared by until Redis has answered a heartbeat (Redis away at start-up):
   * each node then holds 1 / assumedNodes of each limit. A divided fleet's first division is made for at least
   * this many nodes (its founder holds no more than that share while the others are on their way).
   * @default 10
   */
  assumedNodes?: number | undefined;
}

/** The fail mode of the stores that ask Redis on the decision path (redisStore, leasedStore). */
export interface FailModeOptions {
  /**
   * What decides while Redis is away: `'local'`, this process's memory holding this node's share of each
   * limit (1 / the live nodes of the limiter's fleet, counted in Redis; see heartbeatMs); `'open'` allows;
   * `'closed'` denies (retry after timeoutMs).
   * @default 'local'
   */
  failMode?: FailMode | undefined;
}

/** The options every Redis-backed store shares, as a schema (see RedisBackedOptions). */
export const REDIS_BACKED_OPTIONS = {
  redis: required<RedisConnection>((name, value) => toConnection(value, name)),
  clock: option<ClockOption>(clockOptionValue, 'server'),
  timeoutMs: option(timerDuration, DEFAULT_TIMEOUT_MS),
  maxKeys: option(positiveInteger, DEFAULT_MAX_KEYS),
  nodeId: optional(nodeIdValue),
  heartbeatMs: option(timerDuration, DEFAULT_HEARTBEAT_MS),
  assumedNodes: option(positiveInteger, DEFAULT_ASSUMED_NODES),
} as const satisfies SchemaOf<RedisBackedOptions, 'redis'>;

/** The fail mode option, as a schema (see FailModeOptions). */
export const FAIL_MODE_OPTIONS = {
  failMode: option(failModeValue, DEFAULT_FAIL_MODE),
} as const satisfies SchemaOf<FailModeOptions>;

/** redisStore's options: each checked, with its default (see parseOptions); documented on RedisStoreOptions. */
export const REDIS_STORE_OPTIONS = {
  ...REDIS_BACKED_OPTIONS,
  ...FAIL_MODE_OPTIONS,
  maxClockSkewMs: optional(positiveFinite),
  denyCache: option(booleanValue, true),
  maxBatch: option(positiveInteger, DEFAULT_MAX_BATCH),
  onDecision: optional<(event: DecisionEvent) => void>(functionValue),
} as const satisfies SchemaOf<RedisStoreOptions, 'redis'>;

/** A store's clocks, from its `clock` option. */
export interface StoreClocks {
  /** The clock decisions are made with, or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock: deadlines, caches, local decisions (the decision clock when it is one). */
  readonly localClock: Clock;
}

/**
 * The clocks a `clock` option means.
 * @example
 * const { decisionClock, localClock } = storeClocks(o.clock) // 'server': undefined, systemClock
 */
export function storeClocks(choice: ClockOption): StoreClocks {
  const decisionClock = choice === 'server' ? undefined : choice === 'client' ? systemClock : choice;
  return { decisionClock, localClock: decisionClock ?? systemClock };
}
