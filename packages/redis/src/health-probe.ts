import type { HealthProbe } from '@sluice/core/internal';
import type { RedisConnection } from './connection/connection.js';
import { isKeyScopedError } from './reply-errors.js';

/**
 * What the health machine (core's EngineHealth) asks of Redis: it watches the client, probes with an EXISTS of
 * a key where the last failure happened (on a Cluster, that slot's master), and leaves the store healthy on an
 * error Redis answered about one key alone (isKeyScopedError).
 * @example
 * const health = new EngineHealth({ ...redisHealthProbe(connection), timeoutMs: 50, onChange })
 */
export function redisHealthProbe(connection: RedisConnection): HealthProbe {
  return { link: connection, probe: (key) => connection.exists(key), isKeyScoped: isKeyScopedError };
}
