import { warnOnce } from '@sluice/core/internal';
import type { RedisConnection } from './connection/connection.js';
import type { IoredisLike } from './connection/ioredis.js';

interface ClientOptions {
  enableOfflineQueue?: boolean;
  maxRetriesPerRequest?: number | null;
  commandTimeout?: number;
}

/**
 * An ioredis client that queues commands while disconnected and never gives up on them holds every command
 * sent during an outage until Redis is back. sluice's own decisions are bounded by timeoutMs (and it stops
 * sending while Redis fails), but anything else on that client waits, and queued writes run late.
 */
export function checkClient(client: IoredisLike, isCluster: boolean): void {
  const configured = client as IoredisLike & { options?: ClientOptions & { redisOptions?: ClientOptions } };
  const options = isCluster ? configured.options?.redisOptions : configured.options;
  if (options === undefined) return;
  const queues = options.enableOfflineQueue !== false;
  const forever = options.maxRetriesPerRequest === null;
  if (queues && forever && options.commandTimeout === undefined) {
    warnOnce(
      'SLUICE_OFFLINE_QUEUE',
      'this ioredis client queues commands while disconnected (enableOfflineQueue) and retries them forever ' +
        '(maxRetriesPerRequest: null) with no commandTimeout: during an outage they pile up and run late. sluice ' +
        'decisions still answer within timeoutMs, but nothing else on that client does.',
    );
  }
}

/** A policy whose rules live in different Cluster slots is decided slot by slot, with refunds on denial. */
export function warnCrossSlot(prefix: string): void {
  warnOnce(
    'SLUICE_CROSS_SLOT',
    `limiter ${JSON.stringify(prefix)} (and any other such limiter): its policy counts rules against other keys, ` +
      `which live in other Cluster slots; each decision then takes one script call per slot, and permits taken in ` +
      `one slot are refunded when a later slot refuses (never over a limit, briefly under).`,
  );
}

/**
 * A store that cannot work with this Redis (a missing permission, a client of the wrong mode), found by its
 * start-up check: said at start-up even with no 'store-error' listener (once per process; ready() and
 * 'store-error' report every one).
 */
export function warnMisconfigured(message: string): void {
  warnOnce('SLUICE_STORE_MISCONFIGURED', message);
}

/** What the server says of eviction: its policy and memory limit (0: none). */
export interface EvictionSettings {
  readonly policy: string;
  readonly maxmemory: number;
}

/**
 * The server's eviction settings from `INFO memory` (the README's ACL line allows INFO), or undefined when
 * it cannot be read (a user denied INFO, a server that does not say): the check is then skipped quietly.
 * @example
 * const eviction = await evictionSettings(connection) // { policy: 'allkeys-lru', maxmemory: 8388608 }
 */
export async function evictionSettings(connection: RedisConnection): Promise<EvictionSettings | undefined> {
  let text: string;
  try {
    text = await connection.info('memory');
  } catch {
    return undefined;
  }
  const policy = /^maxmemory_policy:(\S+)/m.exec(text)?.[1];
  const maxmemory = Number(/^maxmemory:(\d+)/m.exec(text)?.[1]);
  if (policy === undefined || !Number.isFinite(maxmemory)) return undefined;
  return { policy, maxmemory };
}

/**
 * True when Redis may drop limiter keys to make room: a memory limit with any policy but `noeviction`.
 * Every sluice key has a TTL, so the `volatile-*` policies may evict them as well as the `allkeys-*` ones.
 */
export function evicts(settings: EvictionSettings): boolean {
  return settings.maxmemory > 0 && settings.policy !== 'noeviction';
}

/** A Redis that evicts forgets limits silently: said once at start-up, with what to do. */
export function warnEvicting(settings: EvictionSettings, where: string): void {
  warnOnce(
    'SLUICE_EVICTING_REDIS',
    `the Redis of this ${where} runs maxmemory-policy ${settings.policy} with maxmemory ${settings.maxmemory}: when it is full ` +
      'it may evict limiter keys (they all have TTLs), and an evicted key starts over with a full limit.',
  );
}
