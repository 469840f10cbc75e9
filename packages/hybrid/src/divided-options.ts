import { inCall, oneOf, option, parseOptions } from '@sluice/core/store-kit';
import type { RedisBackedOptions } from '@sluice/redis';
import { REDIS_BACKED_OPTIONS } from '@sluice/redis/store-kit';
import { DividedStore } from './divided-store.js';
import type { ShareMode } from './shares.js';

/** dividedStore's options, declared once: the options of every Redis-backed store, and how a limit is split. */
export const DIVIDED_STORE_OPTIONS = {
  ...REDIS_BACKED_OPTIONS,
  share: option<ShareMode>(
    "How a limit is split among live nodes: 'equal' or 'demand' (max-min fair shares of recent demand).",
    oneOf(['equal', 'demand']),
    'equal',
  ),
} as const;

/**
 * Options of `dividedStore`: those of every Redis-backed store (RedisBackedOptions; the client is used for
 * heartbeats only), and how the limit is split among nodes. No fail mode: a divided store never asks Redis on
 * the decision path, and keeps its last share while Redis is away.
 */
export interface DividedStoreOptions extends RedisBackedOptions {
  /**
   * `'equal'`: limit / N per node. `'demand'`: max-min fair shares of the nodes' recent demand, so a busy
   * node is not held to an equal split while idle ones leave theirs unused.
   * @default 'equal'
   */
  share?: ShareMode | undefined;
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
  return inCall(
    'dividedStore',
    () => new DividedStore(parseOptions('dividedStore options', DIVIDED_STORE_OPTIONS, options, true)),
  );
}
