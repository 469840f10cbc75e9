import { type Clock, type Rules, SluiceRangeError } from '@sluice/core';
import { describeValue, inCall, optionsObject } from '@sluice/core/store-kit';
import type { RedisClient } from '@sluice/redis';
import { type DividedEvents, DividedStore } from './divided-store.js';
import { HybridLimiter } from './hybrid-limiter.js';
import {
  clockOption,
  nodeIdOption,
  optionalPositiveInteger,
  optionalTimerDuration,
  redisClient,
} from './hybrid-options.js';
import type { ShareMode } from './shares.js';
import { supportedRule } from './supported-rule.js';

/** Options of `dividedLimiter`: its one rule, your Redis client, and how the limit is split among nodes. */
export interface DividedLimiterOptions {
  /** One rule: tokenBucket, gcra, fixedWindow or slidingWindowCounter; each node enforces its share of it. */
  rules: Rules;
  /** Your Redis client (any that redisStore takes), used for heartbeats only; never closed by the limiter. */
  redis: RedisClient;
  /** Namespace of the keys in Redis (as createLimiter's). @default 'sluice' */
  prefix?: string;
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
  maxKeyLength?: number;
  /** Shadow mode, as createLimiter's: every request allowed, would-be denials marked `shadowed`. @default false */
  shadow?: boolean;
}

/** A divided limiter: the Limiter interface, `ready()`, and `membership`, `store-error` and `store-recovered` events. */
export type DividedLimiter = HybridLimiter<DividedEvents>;

/**
 * Divided mode: each node enforces its share of the limit locally with the core algorithm; the share
 * comes from heartbeats in Redis. No Redis call on the decision path; approximate (a membership change
 * takes up to 2 heartbeats to reach every node). When Redis is unreachable a node keeps its last share.
 *
 * @example
 * const limiter = dividedLimiter({ rules: fixedWindow({ limit: 10_000, windowMs: 1_000 }), redis, share: 'demand' })
 */
export function dividedLimiter(options: DividedLimiterOptions): DividedLimiter {
  return inCall('dividedLimiter', () => {
    optionsObject('dividedLimiter options', options, true);
    const rule = supportedRule('dividedLimiter', options);
    const share = options.share ?? 'equal';
    if (share !== 'equal' && share !== 'demand') {
      throw new SluiceRangeError('share', share, `share must be 'equal' or 'demand', got ${describeValue(share)}`);
    }
    const settings = {
      redis: redisClient(options.redis),
      heartbeatMs: optionalTimerDuration('heartbeatMs', options.heartbeatMs, 1_000),
      share,
      assumedNodes: optionalPositiveInteger('assumedNodes', options.assumedNodes, 10),
      clock: clockOption(options.clock),
      maxKeys: optionalPositiveInteger('maxKeys', options.maxKeys, 100_000),
      nodeId: nodeIdOption(options.nodeId),
    };
    return new HybridLimiter<DividedEvents>(
      'dividedLimiter',
      (events) => new DividedStore({ ...settings, events }),
      rule,
      { prefix: options.prefix, maxKeyLength: options.maxKeyLength, shadow: options.shadow },
    );
  });
}
