import type { Cluster } from 'ioredis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type TestCluster, startTestCluster } from './redis-cluster.js';
import { startTestRedis, type TestRedis } from './redis-server.js';

/**
 * Starts something before a suite's tests and stops it after. Returns a getter: the value exists only once
 * beforeAll has run, and a test that reads it earlier is told so by `name`.
 */
function useForSuite<T>(name: string, start: () => Promise<T>, stop: (value: T) => Promise<void>): () => T {
  let value: T | undefined;
  beforeAll(async () => {
    value = await start();
  });
  afterAll(async () => {
    if (value !== undefined) await stop(value);
  });
  return () => {
    if (value === undefined) throw new Error(`${name}: used before its beforeAll ran`);
    return value;
  };
}

/** A test Redis and one ioredis client to it, for a suite. */
export function useTestRedis(): () => { server: TestRedis; redis: Redis } {
  return useForSuite(
    'useTestRedis',
    async () => {
      const server = await startTestRedis();
      return { server, redis: new Redis(server.url) };
    },
    async ({ server, redis }) => {
      redis.disconnect();
      await server.stop();
    },
  );
}

/**
 * A 3-master Cluster (no replicas: enough for slot routing, up in about a second) and one ioredis Cluster
 * client, for a suite.
 */
export function useTestCluster(): () => { cluster: TestCluster; client: Cluster } {
  return useForSuite(
    'useTestCluster',
    async () => {
      const cluster = await startTestCluster({ replicas: 0 });
      return { cluster, client: cluster.client() };
    },
    async ({ cluster, client }) => {
      client.disconnect();
      await cluster.stop();
    },
  );
}
