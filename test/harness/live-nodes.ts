/**
 * Two nodes of one limiter for the live-limits tests (test/redis and test/hybrid): each with a store and a
 * Redis client of its own, on a standalone server or a Cluster, under a prefix no other test uses; all of it
 * closed after the test's body, whatever it did.
 */
import { type Algorithm, type Limiter, type Store, createLimiter, tokenBucket } from '@sluice/core';
import { type Cluster, Redis } from 'ioredis';
import type { TestCluster } from './redis-cluster.js';
import type { TestRedis } from './redis-server.js';

export type LiveClient = Redis | Cluster;

/** The servers a live-limits test runs on, as describe.each takes them. */
export function liveDeployments(
  testRedis: () => { server: TestRedis },
  testCluster: () => { cluster: TestCluster },
): ReadonlyArray<{ readonly name: string; readonly open: () => LiveClient }> {
  return [
    { name: 'standalone', open: () => new Redis(testRedis().server.url) },
    { name: 'Cluster', open: () => testCluster().cluster.client() },
  ];
}

let prefixes = 0;

/** A prefix no other limiter of this process uses. */
export const livePrefix = (): string => `live-${process.pid}-${++prefixes}`;

/** A bucket that refills one token in 1,000 s: counts stay whole for the length of a test on any clock. */
export const liveBucket = (capacity: number): Algorithm =>
  tokenBucket({ name: 'api', capacity, refillPerSecond: 0.001 });

/** Two nodes of one limiter, as withTwoNodes hands them to a test. */
export interface TwoNodes<S extends Store> {
  readonly a: Limiter;
  readonly b: Limiter;
  readonly stores: readonly [S, S];
}

/**
 * Runs `body` with two ready nodes of a limiter of `rules` (each a store made by `makeStore` on a client of
 * its own from `open`), then closes the limiters, the stores and the clients.
 * @example
 * await withTwoNodes(open, (redis) => redisStore({ redis }), liveBucket(100), async ({ a, b }) => { ... })
 */
export async function withTwoNodes<S extends Store>(
  open: () => LiveClient,
  makeStore: (redis: LiveClient) => S,
  rules: Algorithm,
  body: (nodes: TwoNodes<S>) => Promise<void>,
): Promise<void> {
  const prefix = livePrefix();
  const clients = [open(), open()];
  const stores = clients.map(makeStore) as [S, S];
  const [a, b] = stores.map((store) => createLimiter({ rules, store, prefix })) as [Limiter, Limiter];
  try {
    // As a service starts: connected, its scripts checked, its channels subscribed, the stored rules read.
    await Promise.all([a.ready(), b.ready()]);
    await body({ a, b, stores });
  } finally {
    await Promise.all([a.close(), b.close()]);
    await Promise.all(stores.map((store) => store.close()));
    for (const client of clients) client.disconnect();
  }
}
