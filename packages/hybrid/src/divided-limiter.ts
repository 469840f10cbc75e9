import { type Clock, type Rules, SluiceRangeError } from '@sluice/core';
import { describeValue, inCall, optionsObject } from '@sluice/core/store-kit';
import type { RedisClient } from '@sluice/redis';
import { type DivideSettings, type DividedEvents, DividedStore } from './divided-store.js';
import { HybridLimiter } from './hybrid-limiter.js';
import {
  clockOption,
  nodeIdOption,
  optionalPositiveInteger,
  optionalTimerDuration,
  redisClient,
} from './hybrid-options.js';
import type { ShareMode } from './shares.js';

/** Options of `dividedStore`: your Redis client, and how the limit is split among nodes. */
export interface DividedStoreOptions {
  /** Your Redis client (any that redisStore takes), used for heartbeats only; never closed by the store. */
  redis: RedisClient;
  /** How often this node reports itself; a node unseen for 3 heartbeats is dead. @default 1000 */
  heartbeatMs?: number;
  /**
   * `'equal'`: limit / N per node. `'demand'`: max-min fair shares of the nodes' recent demand, so a busy
   * node is not held to an equal split while idle ones leave theirs unused.
   * @default 'equal'
   */
  share?: ShareMode;
  /** Until the first heartbeat answers, this node enforces limit / assumedNodes. @default 10 */
  assumedNodes?: number;
  /** Decide (and heartbeat) on this clock instead of the system clock and Redis TIME (tests). */
  clock?: Clock;
  /** Keys this node keeps state for (least recently used dropped first). @default 100000 */
  maxKeys?: number;
  /** This node's id in the membership. @default a random UUID */
  nodeId?: string;
}

/** Options of `dividedLimiter`: its one rule and the limiter's options, beside the store's. */
export interface DividedLimiterOptions extends DividedStoreOptions {
  /** One rule: tokenBucket, gcra, fixedWindow or slidingWindowCounter; each node enforces its share of it. */
  rules: Rules;
  /** Namespace of the keys in Redis (as createLimiter's). @default 'sluice' */
  prefix?: string;
  maxKeyLength?: number;
  /** Shadow mode, as createLimiter's: every request allowed, would-be denials marked `shadowed`. @default false */
  shadow?: boolean;
}

/** A divided limiter: the Limiter interface, `ready()`, and `membership`, `store-error` and `store-recovered` events. */
export type DividedLimiter = HybridLimiter<DividedEvents>;

/** The store options, checked once and given their defaults (one parse for dividedStore and dividedLimiter). */
function divideSettings(options: DividedStoreOptions): Omit<DivideSettings, 'events'> {
  const share = options.share ?? 'equal';
  if (share !== 'equal' && share !== 'demand') {
    throw new SluiceRangeError('share', share, `share must be 'equal' or 'demand', got ${describeValue(share)}`);
  }
  return {
    redis: redisClient(options.redis),
    heartbeatMs: optionalTimerDuration('heartbeatMs', options.heartbeatMs, 1_000),
    share,
    assumedNodes: optionalPositiveInteger('assumedNodes', options.assumedNodes, 10),
    clock: clockOption(options.clock),
    maxKeys: optionalPositiveInteger('maxKeys', options.maxKeys, 100_000),
    nodeId: nodeIdOption(options.nodeId),
  };
}

/**
 * Divided mode as a store: each node enforces its share of the limit locally with the core algorithm; the
 * share comes from heartbeats in Redis. No Redis call on the decision path; approximate (a membership change
 * takes up to 2 heartbeats to reach every node). When Redis is unreachable a node keeps its last share. One
 * rule per limiter, no plans, no bans: createLimiter refuses them, naming the store. The store emits
 * `membership`, `store-error` and `store-recovered`; `store.close()` leaves the membership.
 *
 * @example
 * const store = dividedStore({ redis, share: 'demand' })
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 10_000, windowMs: 1_000 }), store })
 */
export function dividedStore(options: DividedStoreOptions): DividedStore {
  return inCall('dividedStore', () => {
    optionsObject('dividedStore options', options, true);
    return new DividedStore(divideSettings(options));
  });
}

/**
 * A limiter over a dividedStore of its own, in one call (closing it closes the store): the same as
 * `createLimiter({ rules, store: dividedStore(options) })`, with the store's events on the limiter.
 *
 * @example
 * const limiter = dividedLimiter({ rules: fixedWindow({ limit: 10_000, windowMs: 1_000 }), redis, share: 'demand' })
 */
export function dividedLimiter(options: DividedLimiterOptions): DividedLimiter {
  return inCall('dividedLimiter', () => {
    optionsObject('dividedLimiter options', options, true);
    const settings = divideSettings(options);
    return new HybridLimiter<DividedEvents>(
      'dividedLimiter',
      (events) => new DividedStore({ ...settings, events }),
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
