import type { Cluster } from 'ioredis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type TestCluster, startTestCluster } from './redis-cluster.js';
import { startTestRedis, type TestRedis } from './redis-server.js';

/**
 * Starts a test Redis and one client before a suite's tests and stops both after. Returns a getter (the
 * values exist only once beforeAll has run).
 */
export function useTestRedis(): () => { server: TestRedis; redis: Redis } {
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startTestRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  return () => {
    if (server === undefined || redis === undefined) throw new Error('useTestRedis: used before its beforeAll ran');
    return { server, redis };
  };
}

/**
 * Starts a 3-master Cluster (no replicas: enough for slot routing, up in about a second) and one ioredis
 * Cluster client before a suite's tests, and stops both after. Returns a getter, as useTestRedis does.
 */
export function useTestCluster(): () => { cluster: TestCluster; client: Cluster } {
  let cluster: TestCluster | undefined;
  let client: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 0 });
    client = cluster.client();
  });
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });
  return () => {
    if (cluster === undefined || client === undefined) throw new Error('useTestCluster: used before its beforeAll ran');
    return { cluster, client };
  };
}
