import { warnOnce } from '@sluice/core/store-kit';
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
