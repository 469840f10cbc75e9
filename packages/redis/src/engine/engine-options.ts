import { type SchemaOf, option, parseOptions, timerDuration } from '@sluice/core/internal';
import type { RedisClient } from '../connection/connect.js';
import { DEFAULT_TIMEOUT_MS } from '@sluice/core/internal';
import { REDIS_BACKED_OPTIONS } from '../options.js';

/** redisEngine's options. */
export interface RedisEngineOptions {
  /**
   * Your Redis client, as redisStore takes it: ioredis 5/6, iovalkey, node-redis 5/6 or Valkey GLIDE 2,
   * standalone or Cluster. The engine never closes it.
   */
  redis: RedisClient;
  /**
   * Longest each engine call waits for Redis before it rejects (the modes' health machine and fail mode take
   * it from there; the engine has no fail mode of its own).
   * @default 50
   */
  timeoutMs?: number | undefined;
}

/** redisEngine's options: each checked, with its default (see parseOptions); documented on RedisEngineOptions. */
export const REDIS_ENGINE_OPTIONS = {
  redis: REDIS_BACKED_OPTIONS.redis,
  timeoutMs: option(timerDuration, DEFAULT_TIMEOUT_MS),
} as const satisfies SchemaOf<RedisEngineOptions, 'redis'>;

/** The options checked (an unknown one refused by name), with their defaults. */
export function parseEngineOptions(options: RedisEngineOptions) {
  return parseOptions('redisEngine options', REDIS_ENGINE_OPTIONS, options, true);
}
