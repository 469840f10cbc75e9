import type { RedisClient } from './script-runner.js';

/**
 * Asks a client that is waiting out its reconnect backoff to connect now. ioredis 6 backs off
 * exponentially up to 5 s, so without this a store would stay on its fail mode for seconds after Redis is
 * back. Called only while a store is failing, at most once per probe interval; a client that is connected,
 * connecting or closed by its owner is left alone.
 */
export function reconnectNow(client: RedisClient): void {
  if (client.status !== 'reconnecting') return;
  client.connect().catch(() => {
    // Refused again: the client's own backoff timer (or the next probe) tries later.
  });
}
