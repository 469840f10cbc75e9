/**
 * A fleet of nodes of one limiter for the cross-mode live-limits tests (test/seams): each node a process of its
 * own as far as Redis can tell (its client, store and limiter), of the rules its code was written with, in
 * exact, leased or divided mode, on a Redis the test owns; closed together after the test.
 */
import { type Algorithm, type Limiter, type Store, createLimiter, fixedWindow } from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { nextEvent } from './events.js';
import { type LiveClient, liveBucket } from './live-nodes.js';

/** A day's window named 'api': counts stay whole for the length of a test. */
export const dailyWindow = (limit: number): Algorithm => fixedWindow({ name: 'api', limit, windowMs: 86_400_000 });

/** A store with the events every Redis-backed mode emits ('store-error', 'reconfigured'). */
export type EventStore = Store & {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
};

/** Each mode with a rule of `limit` it decides (divided mode: a window, its counts exact per node). */
export const LIVE_MODES: ReadonlyArray<{
  readonly mode: 'exact' | 'leased' | 'divided';
  readonly rule: (limit: number) => Algorithm;
  readonly store: (redis: LiveClient) => EventStore;
}> = [
  { mode: 'exact', rule: liveBucket, store: (redis) => redisStore({ redis, timeoutMs: 1_000, denyCache: false }) },
  { mode: 'leased', rule: liveBucket, store: (redis) => leasedStore({ redis, timeoutMs: 1_000 }) },
  {
    mode: 'divided',
    rule: dailyWindow,
    store: (redis) => dividedStore({ redis, timeoutMs: 1_000, heartbeatMs: 100, reserve: 0 }),
  },
];

/** One node: its limiter, its store, and the errors its store reported. */
export interface FleetNode {
  readonly limiter: Limiter;
  readonly store: EventStore;
  readonly errors: Error[];
}

/**
 * Nodes of limiters on one Redis, each on a client of its own from `open` (called at each node's start: a
 * restarted server may have moved), closed together by close().
 * @example
 * const fleet = new LiveFleet(() => new Redis(server.url))
 * const a = await fleet.node('p', liveBucket(20), (redis) => redisStore({ redis }))
 */
export class LiveFleet {
  readonly #open: () => LiveClient;
  readonly #opened: Array<{ limiter: Limiter; store: Store; client: LiveClient }> = [];

  constructor(open: () => LiveClient) {
    this.#open = open;
  }

  /** A ready node of the limiter on `prefix` with `rules` in its code. */
  async node(prefix: string, rules: Algorithm, makeStore: (redis: LiveClient) => EventStore): Promise<FleetNode> {
    const client = this.#open();
    const store = makeStore(client);
    const errors: Error[] = [];
    store.on('store-error', (error: Error) => void errors.push(error));
    const limiter = createLimiter({ rules, store, prefix });
    this.#opened.push({ limiter, store, client });
    await limiter.ready();
    return { limiter, store, errors };
  }

  async close(): Promise<void> {
    for (const { limiter, store, client } of this.#opened.splice(0)) {
      await limiter.close();
      await store.close?.();
      client.disconnect();
    }
  }
}

/**
 * Once `n` decides under configuration `version` or later: an exact or leased node learns it at its next call
 * to Redis (a slot's stale answer), a divided node at its next heartbeat ('reconfigured').
 */
export async function learns(n: FleetNode, version: number): Promise<void> {
  if (n.limiter.configVersion >= version) return;
  const heard = nextEvent<[{ version: number }]>(n.store, 'reconfigured', (e) => e.version >= version);
  await n.limiter.tryAcquire('probe');
  if (n.limiter.configVersion < version) await heard;
}

/** Grants of `count` single-permit decisions for `key`, one at a time. */
export async function grants(limiter: Limiter, key: string, count: number): Promise<number> {
  let granted = 0;
  for (let i = 0; i < count; i++) if ((await limiter.tryAcquire(key)).allowed) granted++;
  return granted;
}
