import { type Clock, type Rules, SluiceRangeError } from '@sluice/core';
import { describeValue, inCall, optionsObject } from '@sluice/core/store-kit';
import { DEFAULT_TIMEOUT_MS, type FailMode, type RedisClient } from '@sluice/redis';
import { failModeOption } from '@sluice/redis/store-kit';
import { HybridLimiter } from './hybrid-limiter.js';
import {
  clockOption,
  nodeIdOption,
  optionalPositive,
  optionalPositiveInteger,
  optionalTimerDuration,
  redisClient,
} from './hybrid-options.js';
import { type LeaseSettings, type LeasedEvents, LeasedStore } from './leased-store.js';

/** Options of `leasedStore`: your Redis client, and how large a batch each node leases and keeps. */
export interface LeasedStoreOptions {
  /** Your Redis client (any that redisStore takes); never closed by the store. */
  redis: RedisClient;
  /**
   * A batch is about this many ms of this node's recent demand for the key: larger batches mean fewer
   * Redis calls, smaller ones less held by each node.
   * @default 100
   */
  targetMs?: number;
  /**
   * The most permits one node leases at once.
   * @default the rule's burst / (4 x nodes that leased the key recently), at least 1
   */
  maxBatch?: number;
  /**
   * The next batch is asked for when the lease falls below this fraction of a batch (0 never prefetches).
   * @default 0.5
   */
  lowWater?: number;
  /** How long a node counts as a live lessee of a key after its last lease. @default 5000 */
  liveMs?: number;
  /** Longest a decision waits for a lease before failMode decides. @default DEFAULT_TIMEOUT_MS (50, from @sluice/redis) */
  timeoutMs?: number;
  /**
   * When Redis is unreachable, after this node's lease is spent: `'local'` decides with the core algorithm
   * holding this node's share (1 / live lessees), `'open'` allows, `'closed'` denies.
   * @default 'local'
   */
  failMode?: FailMode;
  /** Decide on this clock instead of Redis TIME (tests, with a ManualClock). */
  clock?: Clock;
  /** Keys whose leases this node keeps (least recently used are handed back). @default 10000 */
  maxKeys?: number;
  /** This node's name among the lessees. @default a random UUID */
  nodeId?: string;
}

/** Options of `leasedLimiter`: its one rule and the limiter's options, beside the store's. */
export interface LeasedLimiterOptions extends LeasedStoreOptions {
  /** One rule: tokenBucket, gcra, fixedWindow or slidingWindowCounter. The fleet shares it through Redis. */
  rules: Rules;
  /** Namespace of the keys in Redis (as createLimiter's). @default 'sluice' */
  prefix?: string;
  maxKeyLength?: number;
  /** Shadow mode, as createLimiter's: every request allowed, would-be denials marked `shadowed`. @default false */
  shadow?: boolean;
}

/** A leased limiter: the Limiter interface, `ready()`, and `lease`, `store-error` and `store-recovered` events. */
export type LeasedLimiter = HybridLimiter<LeasedEvents>;

/** The store options, checked once and given their defaults (one parse for leasedStore and leasedLimiter). */
function leaseSettings(options: LeasedStoreOptions): Omit<LeaseSettings, 'events'> {
  const lowWater = options.lowWater === undefined ? 0.5 : options.lowWater;
  if (typeof lowWater !== 'number' || !(lowWater >= 0 && lowWater <= 1)) {
    throw new SluiceRangeError(
      'lowWater',
      lowWater,
      `lowWater must be a number in 0..1, got ${describeValue(lowWater)}`,
    );
  }
  return {
    redis: redisClient(options.redis),
    targetMs: optionalPositive('targetMs', options.targetMs, 100),
    maxBatch: options.maxBatch === undefined ? undefined : optionalPositiveInteger('maxBatch', options.maxBatch, 1),
    lowWater,
    liveMs: optionalPositive('liveMs', options.liveMs, 5_000),
    timeoutMs: optionalTimerDuration('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS),
    failMode: failModeOption(options.failMode),
    clock: clockOption(options.clock),
    maxKeys: optionalPositiveInteger('maxKeys', options.maxKeys, 10_000),
    nodeId: nodeIdOption(options.nodeId),
  };
}

/**
 * Leased mode as a store: the bucket lives in Redis, each node takes batches of permits in one atomic call
 * and spends them locally. About one Redis call per batch; never over the central limit (tokens are debited
 * before they are spent); a node that dies strands at most one batch. One rule per limiter (tokenBucket,
 * gcra, fixedWindow or slidingWindowCounter), no plans, no bans: createLimiter refuses them, naming the store.
 * The store emits `lease`, `store-error` and `store-recovered`; `store.close()` hands unspent permits back.
 *
 * @example
 * const store = leasedStore({ redis })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 10_000, refillPerSecond: 1_000 }), store })
 * store.on('lease', (e) => metrics.observe(e.granted))
 */
export function leasedStore(options: LeasedStoreOptions): LeasedStore {
  return inCall('leasedStore', () => {
    optionsObject('leasedStore options', options, true);
    return new LeasedStore(leaseSettings(options));
  });
}

/**
 * A limiter over a leasedStore of its own, in one call (closing it closes the store): the same as
 * `createLimiter({ rules, store: leasedStore(options) })`, with the store's events on the limiter.
 *
 * @example
 * const limiter = leasedLimiter({ rules: tokenBucket({ capacity: 10_000, refillPerSecond: 1_000 }), redis })
 * limiter.on('lease', (e) => metrics.observe(e.granted))
 * const d = await limiter.tryAcquire('api')
 */
export function leasedLimiter(options: LeasedLimiterOptions): LeasedLimiter {
  return inCall('leasedLimiter', () => {
    optionsObject('leasedLimiter options', options, true);
    const settings = leaseSettings(options);
    return new HybridLimiter<LeasedEvents>(
      'leasedLimiter',
      (events) => new LeasedStore({ ...settings, events }),
      options.rules,
      {
        prefix: options.prefix,
        maxKeyLength: options.maxKeyLength,
        shadow: options.shadow,
        plans: (options as { plans?: unknown }).plans,
      },
    );
  });
}
