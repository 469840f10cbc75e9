import { DEFAULT_MAX_KEYS } from '../engine/memory-store.js';
import { type Clock, clockValue, systemClock } from '../foundation/clock.js';
import { SluiceRangeError } from '../foundation/errors.js';
import { type SchemaOf, option, optional } from '../foundation/options.js';
import { describe as describeValue, positiveInteger, timerDuration } from '../foundation/validate.js';
import { DEFAULT_TIMEOUT_MS } from './deadline.js';
import { DEFAULT_FAIL_MODE, type FailMode, failModeValue } from './fail-mode.js';

/** How often an engine-backed store tells its engine this node is alive, unless its `heartbeatMs` says otherwise. */
export const DEFAULT_HEARTBEAT_MS = 1_000;

/** How many nodes a limit is taken to be shared by until the engine has said, unless `assumedNodes` says otherwise. */
export const DEFAULT_ASSUMED_NODES = 10;

/**
 * Where an engine-backed store's decision time comes from: `'server'`, the engine's (Redis TIME: one clock for the whole
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

/** A `clock` option of an engine-backed store. */
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
 * The options every engine-backed store takes beside its engine's own (redisStore, leasedStore, dividedStore
 * add `redis`): one name, one meaning and one default each, on every store (see docs/options.md).
 */
export interface EngineBackedOptions {
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

/**
 * The options every engine-backed store shares beside its engine's own, as a schema (see EngineBackedOptions):
 * a store's schema spreads it after its engine's option (REDIS_BACKED_OPTIONS: `redis`).
 */
export const ENGINE_BACKED_OPTIONS = {
  clock: option<ClockOption>(clockOptionValue, 'server'),
  timeoutMs: option(timerDuration, DEFAULT_TIMEOUT_MS),
  maxKeys: option(positiveInteger, DEFAULT_MAX_KEYS),
  nodeId: optional(nodeIdValue),
  heartbeatMs: option(timerDuration, DEFAULT_HEARTBEAT_MS),
  assumedNodes: option(positiveInteger, DEFAULT_ASSUMED_NODES),
} as const satisfies SchemaOf<EngineBackedOptions>;

/** The fail mode option, as a schema (see FailModeOptions). */
export const FAIL_MODE_OPTIONS = {
  failMode: option(failModeValue, DEFAULT_FAIL_MODE),
} as const satisfies SchemaOf<FailModeOptions>;

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
