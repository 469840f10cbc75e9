import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCluster, type TestCluster } from './redis-cluster.js';
import { startTestRedis, type TestRedis } from './redis-server.js';

describe('test harness', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => redis?.stop());

  it('starts a throwaway standalone redis-server that answers', async () => {
    const client = new Redis(redis.url);
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
    if (redis.source === 'spawned') expect(redis.port).not.toBe(6379);
  });

  describe('cluster', () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await startTestCluster();
    });
    afterAll(async () => cluster?.stop());

    it('creates 3 masters and 3 in-sync replicas and routes by hash tag', async () => {
      const client = cluster.client();
      await client.set('{a}x', '1');
      await client.set('{b}y', '2');
      expect(await client.get('{a}x')).toBe('1');
      const nodes = ((await client.cluster('NODES')) as string).trim().split('\n');
      expect(nodes.filter((line) => line.includes('master'))).toHaveLength(3);
      expect(nodes.filter((line) => line.includes('slave'))).toHaveLength(3);
      client.disconnect();
    });
  });
});
