import { type Clock, DEFAULT_MAX_KEYS, SluiceRangeError, systemClock } from '@sluice/core';
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
  timerDuration,
} from '@sluice/core/store-kit';
import { toConnection } from './connection/connect.js';
import type { RedisConnection } from './connection/connection.js';
import { DEFAULT_TIMEOUT_MS } from './deadline.js';
import type { DecisionEvent } from './exact/exact-binding.js';
import { DEFAULT_FAIL_MODE, type FailMode, failModeValue } from './fleet/fail-mode.js';
import type { RedisClient } from './connection/connect.js';

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
   * Where decision time comes from. `'server'`: Redis TIME, one clock for the whole fleet. `'client'`: this
   * process's monotonic clock; or a Clock (a ManualClock in tests) to decide on it. (A divided store decides on
   * this process's clock, or the Clock given, and heartbeats on this one.)
   * @default 'server'
   */
  clock?: ClockOption | undefined;
  /**
   * Longest a decision or a control waits for Redis before the fail mode decides instead (a divided store: its
   * start-up check and its last call at close; heartbeats wait up to heartbeatMs).
   * @default DEFAULT_TIMEOUT_MS (50)
   */
  timeoutMs?: number | undefined;
  /**
   * The most keys the store keeps in this process: its fail mode's states (over every limiter), deny caches,
   * leases, a divided store's shares.
   * @default DEFAULT_MAX_KEYS (100_000)
   */
  maxKeys?: number | undefined;
  /**
   * This node's name in its limiters' fleets (and among a leased key's lessees, in a divided membership).
   * @default a random UUID
   */
  nodeId?: string | undefined;
  /**
   * How often this node tells Redis it is alive under each limiter's prefix: the fleet a fail mode's share
   * (failMode 'local') or a divided share is counted from. One call per Cluster slot for all of a store's
   * limiters, O(log N) for Redis whatever the fleet's size N; a node unseen for three heartbeats no longer
   * counts.
   * @default DEFAULT_HEARTBEAT_MS (1000)
   */
  heartbeatMs?: number | undefined;
  /**
   * The nodes a limit is taken to be shared by until Redis has answered a heartbeat (Redis away at start-up):
   * each node then holds 1 / assumedNodes of each limit. A divided fleet's first division is made for at least
   * this many nodes (its founder holds no more than that share while the others are on their way).
   * @default DEFAULT_ASSUMED_NODES (10)
   */
  assumedNodes?: number | undefined;
}

/** The fail mode of the stores that ask Redis on the decision path (redisStore, leasedStore). */
export interface FailModeOptions {
  /**
   * What decides while Redis is away: `'local'`, this process's memory holding this node's share of each
   * limit (1 / the live nodes of the limiter's fleet, counted in Redis; see heartbeatMs); `'open'` allows;
   * `'closed'` denies (retry after timeoutMs).
   * @default DEFAULT_FAIL_MODE ('local')
   */
  failMode?: FailMode | undefined;
}

/** The options every Redis-backed store shares, as a schema (see RedisBackedOptions). */
export const REDIS_BACKED_OPTIONS = {
  redis: required<RedisConnection>(
    'Your Redis client (ioredis, iovalkey, node-redis or Valkey GLIDE); the store never closes it.',
    (name, value) => toConnection(value, name),
  ),
  clock: option<ClockOption>(
    "Where decision time comes from: 'server' (Redis TIME), 'client' (this process) or a Clock.",
    clockOptionValue,
    'server',
  ),
  timeoutMs: option(
    'Longest a decision or control waits for Redis before the fail mode decides (a heartbeat waits heartbeatMs).',
    timerDuration,
    DEFAULT_TIMEOUT_MS,
    'DEFAULT_TIMEOUT_MS',
  ),
  maxKeys: option(
    'The most keys this node keeps in memory per store (fail-mode states, deny cache, leases, shares).',
    positiveInteger,
    DEFAULT_MAX_KEYS,
    'DEFAULT_MAX_KEYS',
  ),
  nodeId: optional(
    "This node's name in its limiters' fleets; a random UUID when not given. Give each process its own: one taken by another live process is found at a heartbeat and this one goes on as nodeId.<random> (SLUICE_NODE_ID_REUSED).",
    nodeIdValue,
  ),
  heartbeatMs: option(
    'How often this node tells Redis it is alive (the fleet a fail mode or a divided share is counted from).',
    timerDuration,
    DEFAULT_HEARTBEAT_MS,
    'DEFAULT_HEARTBEAT_MS',
  ),
  assumedNodes: option(
    "How many nodes share a limit until Redis has said (the share before the first heartbeat is answered; a divided fleet's first division is made for at least this many).",
    positiveInteger,
    DEFAULT_ASSUMED_NODES,
    'DEFAULT_ASSUMED_NODES',
  ),
} as const;

/** The fail mode option, as a schema (see FailModeOptions). */
export const FAIL_MODE_OPTIONS = {
  failMode: option(
    "What decides while Redis is away: 'local' (this node's share, in memory), 'open' (allow) or 'closed' (deny).",
    failModeValue,
    DEFAULT_FAIL_MODE,
    'DEFAULT_FAIL_MODE',
  ),
} as const;

/** redisStore's options, declared once (see parseOptions). */
export const REDIS_STORE_OPTIONS = {
  ...REDIS_BACKED_OPTIONS,
  ...FAIL_MODE_OPTIONS,
  maxClockSkewMs: optional(
    "With a client clock: how far a decision time may be from Redis TIME (1000 with 'client'; none with a Clock).",
    positiveFinite,
  ),
  denyCache: option('Answer a denial that cannot change yet locally, until it can.', booleanValue, true),
  maxBatch: option(
    'The most decisions one script call carries.',
    positiveInteger,
    DEFAULT_MAX_BATCH,
    'DEFAULT_MAX_BATCH',
  ),
  onDecision: optional<(event: DecisionEvent) => void>(
    'Called with every decision, where it came from, and when it was made.',
    functionValue,
  ),
} as const;

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
