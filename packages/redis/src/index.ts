import { inCall } from '@sluice/core/internal';
export { RedisStore } from './redis-store.js';
export type { RedisStoreEvents, RedisStoreOptions } from './redis-store.js';
export type {
  DecisionEvent,
  FailMode,
  FallbackChargedEvent,
  FleetEvent,
  ReconfiguredEvent,
  ResetHeardEvent,
  StoreEvents,
} from '@sluice/core/internal';
export type { RedisClient } from './connection/connect.js';
export { redisEngine } from './engine/redis-host.js';
export type { RedisEngineOptions } from './engine/engine-options.js';

import { RedisStore, type RedisStoreOptions } from './redis-store.js';

/**
 * Creates a Redis store; see {@link RedisStoreOptions}.
 *
 * @example
 * import { Redis } from 'ioredis'
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 100, windowMs: 60_000 }), store: redisStore({ redis: new Redis() }) })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return inCall('redisStore', () => {
    return new RedisStore(options);
  });
}
