/**
 * Caches of a decision against changes made on another node. Exact mode's deny cache and leased mode's
 * lease (which remembers that the key's central state was spent) answer a denial without asking Redis; a
 * change on another node that can turn that denial into a grant (a limit raised, an override set or
 * removed, a reset, an unblock, a refund) must reach them. Each pair on two nodes of one limiter on a
 * throwaway Redis (standalone and Cluster): node A caches a denial, node B changes something, and once A has heard of the change
 * (the store's event), A's next decisions obey it, counts exact.
 */
import { type Limiter, ManualClock, createLimiter } from '@sluice/core';
import { type LeasedStore, leasedStore } from '@sluice/hybrid';
import { type RedisStore, redisStore } from '@sluice/redis';
import { DENY_CACHE_TRUST_MS } from '@sluice/core/internal';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { nextEvent } from '../harness/events.js';
import { type TwoNodes, liveBucket, liveDeployments, livePrefix, withTwoNodes } from '../harness/live-nodes.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();
const deployments = liveDeployments(testRedis, testCluster);

/** Grants of `count` single-permit decisions for `key`, one at a time (each may be the cache's answer). */
async function grants(limiter: Limiter, key: string, count: number, plan?: string): Promise<number> {
  let granted = 0;
  for (let i = 0; i < count; i++)
    if ((await limiter.tryAcquire(key, plan === undefined ? undefined : { plan })).allowed) granted++;
  return granted;
}

/** Grants of `count` decisions for `key`, 8 at a time: demand enough for leased mode to lease the key. */
async function leasedGrants(limiter: Limiter, key: string, count: number): Promise<number> {
  let granted = 0;
  for (let i = 0; i < count; i += 8) {
    const batch = Array.from({ length: Math.min(8, count - i) }, () => limiter.tryAcquire(key));
    granted += (await Promise.all(batch)).filter((d) => d.allowed).length;
  }
  return granted;
}

/** Runs `change` (a reset, unblock or refund on another node) and resolves once `store` heard of it for `key`. */
async function heard(store: RedisStore | LeasedStore, key: string, change: () => Promise<unknown>): Promise<void> {
  const told = nextEvent(store, 'reset-heard', (event: { key: string }) => event.key === key);
  await change();
  await told;
}

/** Resolves once `store` decides under a configuration newer than the one `limiter` (its node) knows now. */
function learnsNext(store: RedisStore | LeasedStore, limiter: Limiter) {
  const known = limiter.configVersion;
  return nextEvent(store, 'reconfigured', (event: { version: number }) => event.version > known);
}

describe.each(deployments)(
  'exact mode on a $name server: a denial node A cached, and a change on node B',
  ({ open }) => {
    const onTwoNodes = (capacity: number, body: (nodes: TwoNodes<RedisStore>) => Promise<void>) =>
      withTwoNodes(open, (redis) => redisStore({ redis }), liveBucket(capacity), body);

    /** 60 of 100 used, then A lowers the limit to 50 and both nodes are denied: A's denial is cached. */
    async function lowered(a: Limiter, b: Limiter, stores: readonly [RedisStore, RedisStore]): Promise<void> {
      expect(await grants(a, 'k', 60)).toBe(60);
      const bLearns = learnsNext(stores[1], b);
      await a.reconfigure(liveBucket(50));
      await bLearns;
      expect((await grants(a, 'k', 5)) + (await grants(b, 'k', 5))).toBe(0);
    }

    it('B raises the limit A lowered: A, once it decides under the new version, grants what is left (140 of 200)', async () => {
      await onTwoNodes(100, async ({ a, b, stores }) => {
        await lowered(a, b, stores);
        const aLearns = learnsNext(stores[0], a);
        await b.reconfigure(liveBucket(200));
        await aLearns;
        const byA = await grants(a, 'k', 100);
        const byB = await grants(b, 'k', 100);
        expect([byA, byB]).toEqual([100, 40]);
      });
    });

    it("a caller awaiting A's cached denials in a loop lets B's raise in: the loop's first grant comes once A heard", async () => {
      await onTwoNodes(100, async ({ a, b, stores }) => {
        await lowered(a, b, stores);
        // The raise is started, not awaited: it needs this process's I/O, which a loop of cached answers given
        // on microtasks alone starved (c132e5b: the loop ran all its 20,000 denials before the raise could
        // even be sent). Now each cached answer waits for the I/O already delivered, so the raise goes out, A
        // hears it, and the loop's next decision is Redis's grant under 200.
        // The bound only ends a starved loop: a raise on the Cluster takes about 550 ms, in which a loop of cached
        // answers ran 500 to 20,000 denials (one run passed the old bound of 20,000 before it heard).
        const raised = b.reconfigure(liveBucket(200));
        let denials = 0;
        while (!(await a.tryAcquire('k')).allowed && denials < 400_000) denials++;
        expect(denials).toBeLessThan(400_000);
        await raised;
        const byA = 1 + (await grants(a, 'k', 99));
        const byB = await grants(b, 'k', 100);
        expect([byA, byB]).toEqual([100, 40]);
      });
    });

    it('B refunds the key: A, once it heard, grants what was given back', async () => {
      await onTwoNodes(10, async ({ a, b, stores }) => {
        expect(await grants(a, 'k', 12)).toBe(10);
        await heard(stores[0], 'k', () => b.refund('k', 4));
        expect(await grants(a, 'k', 10)).toBe(4);
      });
    });

    it('B resets the key: A, once it heard, grants the whole limit again', async () => {
      await onTwoNodes(10, async ({ a, b, stores }) => {
        expect(await grants(a, 'k', 12)).toBe(10);
        await heard(stores[0], 'k', () => b.reset('k'));
        expect(await grants(a, 'k', 20)).toBe(10);
      });
    });

    it('B unblocks the key A cached a ban of: A, once it heard, grants again', async () => {
      await onTwoNodes(10, async ({ a, b, stores }) => {
        await b.block('k', 600_000);
        expect(await a.tryAcquire('k')).toMatchObject({ allowed: false, blocked: true });
        expect(await grants(a, 'k', 3)).toBe(0);
        await heard(stores[0], 'k', () => b.unblock('k'));
        expect(await grants(a, 'k', 20)).toBe(10);
      });
    });

    it('a limiter with plans: B refunds the key under one plan, A drops the denial it cached under another', async () => {
      const prefix = livePrefix();
      const clients = [open(), open()];
      const stores = clients.map((redis) => redisStore({ redis }));
      const plans = { free: liveBucket(10), pro: liveBucket(20) };
      const [a, b] = stores.map((store) => createLimiter({ plans, store, prefix })) as [Limiter, Limiter];
      try {
        await Promise.all([a.ready(), b.ready()]);
        expect(await grants(a, 'k', 12, 'free')).toBe(10);
        await heard(stores[0] as RedisStore, 'k', () => b.refund('k', 3, { plan: 'pro' }));
        expect(await grants(a, 'k', 10, 'free')).toBe(3);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await Promise.all(stores.map((store) => store.close()));
        for (const client of clients) client.disconnect();
      }
    });

    it('B sets an override of the key, then removes it: A obeys each from the version it learns', async () => {
      await onTwoNodes(10, async ({ a, b, stores }) => {
        expect(await grants(a, 'k', 12)).toBe(10);
        const set = learnsNext(stores[0], a);
        await b.override('k', liveBucket(30));
        await set;
        expect(await grants(a, 'k', 30)).toBe(20);
        const removed = learnsNext(stores[0], a);
        await b.removeOverride('k');
        await removed;
        // Back under 10 with 30 used: denied, and the override's denials cached by A are gone with it.
        expect(await grants(a, 'k', 5)).toBe(0);
        const raised = learnsNext(stores[0], a);
        await b.reconfigure(liveBucket(35));
        await raised;
        expect(await grants(a, 'k', 10)).toBe(5);
      });
    });
  },
);

describe.each(deployments)(
  'leased mode on a $name server: a lease of node A that found the key spent, and a change on node B',
  ({ open }) => {
    const onTwoNodes = (capacity: number, body: (nodes: TwoNodes<LeasedStore>) => Promise<void>) =>
      withTwoNodes(open, (redis) => leasedStore({ redis }), liveBucket(capacity), body);

    /** A leases and spends the whole limit; its lease then says the central state is spent. */
    async function spentByA(a: Limiter, store: LeasedStore, capacity: number): Promise<void> {
      expect(await leasedGrants(a, 'k', capacity + 20)).toBe(capacity);
      await store.settled();
      expect(await leasedGrants(a, 'k', 16)).toBe(0);
    }

    it('B resets the key: A, once it heard, grants the whole limit again', async () => {
      await onTwoNodes(100, async ({ a, b, stores }) => {
        await spentByA(a, stores[0], 100);
        await heard(stores[0], 'k', () => b.reset('k'));
        expect(await leasedGrants(a, 'k', 120)).toBe(100);
      });
    });

    it('B refunds the key to its central state: A, once it heard, grants what was given back', async () => {
      await onTwoNodes(100, async ({ a, b, stores }) => {
        await spentByA(a, stores[0], 100);
        await heard(stores[0], 'k', () => b.refund('k', 30));
        expect(await leasedGrants(a, 'k', 60)).toBe(30);
      });
    });

    it('B raises the limit: A, once it decides under the new version, grants what is left', async () => {
      await onTwoNodes(100, async ({ a, b, stores }) => {
        await spentByA(a, stores[0], 100);
        const aLearns = learnsNext(stores[0], a);
        await b.reconfigure(liveBucket(150));
        await aLearns;
        expect(await leasedGrants(a, 'k', 80)).toBe(50);
      });
    });
  },
);

describe('leased mode: a node that missed the message of a change', () => {
  it("asks Redis again within DENY_CACHE_TRUST_MS, not at the spent state's retry time (1,000 s away)", async () => {
    const clock = new ManualClock(1_000_000);
    const open = (deployments[0] as (typeof deployments)[number]).open;
    await withTwoNodes(
      open,
      (redis) => leasedStore({ redis, clock }),
      liveBucket(100),
      async ({ a, stores }) => {
        expect(await leasedGrants(a, 'k', 120)).toBe(100);
        await stores[0].settled();
        expect(await leasedGrants(a, 'k', 16)).toBe(0);
        // The key's central state forgotten with no message (as a reset A's subscriber missed while reconnecting).
        const raw = new Redis(testRedis().server.url);
        try {
          const keys = await raw.keys(`*${a.prefix}*{k}*`);
          expect(keys.length).toBeGreaterThan(0);
          await raw.del(...keys);
        } finally {
          raw.disconnect();
        }
        clock.advance(DENY_CACHE_TRUST_MS - 1);
        expect(await leasedGrants(a, 'k', 8)).toBe(0);
        clock.advance(1);
        expect(await leasedGrants(a, 'k', 120)).toBe(100);
      },
    );
  });
});
