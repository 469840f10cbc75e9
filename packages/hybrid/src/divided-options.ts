import { oneOf, option } from '@sluice/core/store-kit';
import type { RedisBackedOptions } from '@sluice/redis';
import { REDIS_BACKED_OPTIONS } from '@sluice/redis/store-kit';
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
