import {
  type EngineBackedOptions,
  ENGINE_BACKED_OPTIONS,
  FAIL_MODE_OPTIONS,
  booleanValue,
  functionValue,
  option,
  optional,
  positiveFinite,
  positiveInteger,
  required,
  type SchemaOf,
} from '@sluice/core/internal';
import { toConnection } from './connection/connect.js';
import type { RedisConnection } from './connection/connection.js';
import type { DecisionEvent } from '@sluice/core/internal';
import type { RedisClient } from './connection/connect.js';
import type { RedisStoreOptions } from './redis-store.js';

/** The most decisions one script call carries unless redisStore's `maxBatch` says otherwise (measured best: 32-64). */
export const DEFAULT_MAX_BATCH = 64;

/** With `clock: 'client'`, how far a decision time may be from Redis TIME unless `maxClockSkewMs` says otherwise. */
export const DEFAULT_CLIENT_SKEW_MS = 1_000;

/**
 * The options every Redis-backed store takes (redisStore, leasedStore, dividedStore): its Redis client and
 * those of every engine-backed store; one name, one meaning and one default each (see docs/options.md).
 */
export interface RedisBackedOptions extends EngineBackedOptions {
  /**
   * Your Redis client, as you have it: ioredis 5/6 (`new Redis()`, `new Cluster()`), iovalkey, node-redis 5/6
   * (`createClient()`, `createCluster()`, connected or connecting) or Valkey GLIDE 2 (`GlideClient`,
   * `GlideClusterClient`). The store never closes it.
   */
  redis: RedisClient;
}

/** The options every Redis-backed store shares, as a schema (see RedisBackedOptions). */
export const REDIS_BACKED_OPTIONS = {
  redis: required<RedisConnection>((name, value) => toConnection(value, name)),
  ...ENGINE_BACKED_OPTIONS,
} as const satisfies SchemaOf<RedisBackedOptions, 'redis'>;

/** redisStore's options: each checked, with its default (see parseOptions); documented on RedisStoreOptions. */
export const REDIS_STORE_OPTIONS = {
  ...REDIS_BACKED_OPTIONS,
  ...FAIL_MODE_OPTIONS,
  maxClockSkewMs: optional(positiveFinite),
  denyCache: option(booleanValue, true),
  maxBatch: option(positiveInteger, DEFAULT_MAX_BATCH),
  onDecision: optional<(event: DecisionEvent) => void>(functionValue),
} as const satisfies SchemaOf<RedisStoreOptions, 'redis'>;
