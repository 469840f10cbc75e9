/**
 * A refund on Redis is announced to every node (PUBLISH on the limiter's channel) only when it can turn a denial
 * some node holds into a grant: when the key was denying one permit before it (a deny cache keeps single-permit
 * denials only; a lease remembers a central state it found spent). Every refund once published: 500 refunds of
 * keys far from their limit were 500 PUBLISHes, one per request with skipSuccessfulRequests, broadcast over a
 * Cluster's bus. Counted with INFO commandstats on a throwaway server, in exact and leased mode; the cached
 * denials a refund must still reach are test/redis/cached-denials.test.ts's.
 */
import { type Limiter, createLimiter, tokenBucket } from '@sluice/core';
import { leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();

/** Where the limiter runs: its client, and one admin client per server (a Cluster's masters each count their own). */
interface Deployment {
  readonly client: () => Redis | Cluster;
  readonly servers: () => readonly string[];
}
const deployments: Record<string, Deployment> = {
  standalone: { client: () => testRedis().redis, servers: () => [testRedis().server.url] },
  Cluster: { client: () => testCluster().client, servers: () => testCluster().cluster.nodes.map((node) => node.url) },
};

let admins: Redis[] = [];
afterEach(() => {
  for (const admin of admins.splice(0)) admin.disconnect();
});

/** PUBLISH calls the servers ran since `resetStats`, once the store's client has sent what it queued. */
async function publishes(deployment: Deployment): Promise<number> {
  // The announcement is not awaited by the refund, but written before it resolves: a later reply on every
  // connection of the client means the servers have run it.
  const client = deployment.client();
  await Promise.all(client instanceof Cluster ? client.nodes('master').map((node) => node.ping()) : [client.ping()]);
  let calls = 0;
  for (const admin of admins)
    calls += Number(/cmdstat_publish:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
  return calls;
}
async function resetStats(deployment: Deployment): Promise<void> {
  if (admins.length === 0) admins = deployment.servers().map((url) => new Redis(url));
  await Promise.all(admins.map((admin) => admin.config('RESETSTAT')));
}

const modes = {
  exact: (redis: Redis | Cluster) => redisStore({ redis }),
  leased: (redis: Redis | Cluster) => leasedStore({ redis }),
};
let n = 0;

const cases = Object.keys(modes).flatMap((mode) =>
  Object.keys(deployments).map((where) => ({ mode: mode as keyof typeof modes, where })),
);

describe.each(cases)('$mode mode on $where', ({ mode, where }) => {
  const deployment = deployments[where] as Deployment;
  async function limiterOf(capacity: number): Promise<{ limiter: Limiter; close: () => Promise<void> }> {
    const store = modes[mode](deployment.client());
    const limiter = createLimiter({
      prefix: `refund-announce-${process.pid}-${n++}`,
      rules: tokenBucket({ name: 'api', capacity, refillPerSecond: 1 / 3_600 }),
      store,
    });
    await limiter.ready();
    return {
      limiter,
      close: async () => {
        await limiter.close();
        await store.close();
      },
    };
  }

  it('500 refunds of keys that still grant: no PUBLISH', async () => {
    const { limiter, close } = await limiterOf(1_000_000);
    try {
      await resetStats(deployment);
      for (let i = 0; i < 500; i++) {
        const key = `u${i % 50}`;
        const decision = await limiter.tryAcquire(key);
        await limiter.refund(key, 1, { decision });
      }
      expect(await publishes(deployment)).toBe(0);
    } finally {
      await close();
    }
  });

  it('a refund of a key denying one permit: one PUBLISH; of a key one short of it (it grants): none', async () => {
    const { limiter, close } = await limiterOf(5);
    try {
      const grants = await Promise.all(Array.from({ length: 4 }, () => limiter.tryAcquire('k')));
      expect(grants.every((d) => d.allowed)).toBe(true);
      await resetStats(deployment);
      // One left: the key grants, no node can hold a denial of it.
      await limiter.refund('k', 1, { decision: grants[0] });
      expect(await publishes(deployment)).toBe(0);
      const last = [await limiter.tryAcquire('k'), await limiter.tryAcquire('k'), await limiter.tryAcquire('k')];
      expect(last.map((d) => d.allowed)).toEqual([true, true, false]);
      await resetStats(deployment);
      await limiter.refund('k', 1, { decision: last[1] });
      expect(await publishes(deployment)).toBe(1);
      expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    } finally {
      await close();
    }
  });
});
