import type { RedisClient } from './script-runner.js';

/** The fields of an ioredis client (Redis or Cluster) that hold its pending reconnect. */
interface ReconnectingClient {
  status: string;
  reconnectTimeout?: ReturnType<typeof setTimeout> | null;
  connect(): Promise<void>;
}

/**
 * Asks a client that is waiting out its reconnect backoff to connect now. ioredis backs off up to seconds,
 * so without this a store would stay on its fail mode for seconds after Redis is back.
 *
 * The nudge replaces the client's pending reconnect timer: it clears the timer ioredis set and makes the
 * attempt that timer would have made, so there is still exactly one reconnect loop (calling connect() while
 * the timer is pending starts a second one; each nudge used to add a loop). A client that is connected,
 * connecting, or closed by its owner (no pending timer: `disconnect()` clears it) is left alone.
 */
export function reconnectNow(client: RedisClient): void {
  const c = client as unknown as ReconnectingClient;
  if (c.status !== 'reconnecting' || c.reconnectTimeout === undefined || c.reconnectTimeout === null) return;
  clearTimeout(c.reconnectTimeout);
  c.reconnectTimeout = null;
  c.connect().catch(() => {
    // Refused again: the client schedules its next attempt itself, as after any failed attempt.
  });
}
