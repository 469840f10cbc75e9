/**
 * Allow and deny lists on Redis: what one node adds holds on another within a second (its message heard), a
 * missed message heals at the next version check, random changes decide the same on Redis as in memory,
 * and the lists are bounded on Redis as in memory.
 */
import { type Limiter, MAX_ACCESS_ENTRIES, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { accessListKeys } from '../../packages/redis/src/key-layout.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let n = 0;

/** Two limiters of one prefix, each on its own client and redisStore, ready; closed after `body`. */
async function withTwo(body: (a: Limiter, b: Limiter, prefix: string) => Promise<void>, refreshMs?: number) {
  const { server } = testRedis();
  const clients = [new Redis(server.url), new Redis(server.url)];
  const stores = clients.map((redis) => redisStore({ redis }));
  const prefix = `lists-${process.pid}-${++n}`;
  const [a, b] = stores.map((store) =>
    createLimiter({
      rules: fixedWindow({ name: 'api', limit: 3, windowMs: 60_000 }),
      store,
      prefix,
      ...(refreshMs === undefined ? {} : { accessList: { refreshMs } }),
    }),
  ) as [Limiter, Limiter];
  try {
    await Promise.all([a.ready(), b.ready()]);
    await body(a, b, prefix);
  } finally {
    await Promise.all([a.close(), b.close()]);
    await Promise.all(stores.map((store) => store.close()));
    for (const client of clients) client.disconnect();
  }
}

describe('access lists on Redis', () => {
  it('a CIDR range denied on one node holds on the other within a second; removed, it lets go there too', async () => {
    await withTwo(async (a, b) => {
      expect((await b.tryAcquire('198.51.100.7')).allowed).toBe(true);
      await a.deny('198.51.100.0/24', { reason: 'scanner' });
      const from = performance.now();
      await vi.waitFor(async () => expect((await b.tryAcquire('198.51.100.7')).access?.list).toBe('deny'), {
        timeout: 1_000,
        interval: 5,
      });
      expect(performance.now() - from).toBeLessThan(1_000);
      expect(await b.accessList()).toEqual([{ entry: '198.51.100.0/24', list: 'deny', reason: 'scanner' }]);
      expect(await b.unlist('198.51.100.0/24')).toBe(1);
      await vi.waitFor(async () => expect((await a.tryAcquire('198.51.100.7')).access).toBeUndefined(), {
        timeout: 1_000,
        interval: 5,
      });
    });
  });

  it('a change whose message was missed holds from the next version check (refreshMs)', async () => {
    await withTwo(async (a, _b, prefix) => {
      const [entries, version] = accessListKeys(prefix);
      const { redis } = testRedis();
      // As access_list.lua writes it, without the message.
      await redis.hset(entries, 'ghost', 'deny\n\nmissed');
      await redis.incrby(version, 1);
      await vi.waitFor(
        async () =>
          expect((await a.tryAcquire('ghost')).access).toEqual({ list: 'deny', entry: 'ghost', reason: 'missed' }),
        { timeout: 2_000, interval: 20 },
      );
    }, 200);
  });

  it('random allows, denies, removals and expiries decide every probe the same on Redis as in memory', async () => {
    const entryArb = fc.constantFrom('k1', 'k2', '10.0.0.0/8', '10.1.0.0/16', '10.1.2.3', '2001:db8::/32', '::1');
    const stepArb = fc.oneof(
      fc.record({ op: fc.constantFrom('allow' as const, 'deny' as const), entry: entryArb, ttl: fc.boolean() }),
      fc.record({ op: fc.constant('unlist' as const), entry: entryArb, ttl: fc.constant(false) }),
    );
    const probes = ['k1', 'k2', '10.9.9.9', '10.1.9.9', '10.1.2.3', '2001:db8::5', '::1', '::ffff:10.1.2.3', 'x'];
    await withTwo(async (onRedis) => {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { maxLength: 8 }), async (steps) => {
          const inMemory = createLimiter({
            rules: fixedWindow({ name: 'api', limit: 3, windowMs: 60_000 }),
            store: memoryStore(),
          });
          await onRedis.unlist([...(await onRedis.accessList()).map((e) => e.entry), 'k1']);
          for (const step of steps) {
            const options = step.ttl ? { ttlMs: 60_000 } : {};
            for (const limiter of [onRedis, inMemory]) {
              if (step.op === 'unlist') await limiter.unlist(step.entry);
              else await limiter[step.op](step.entry, options);
            }
          }
          const said = async (limiter: Limiter) => {
            const out: Array<string | undefined> = [];
            for (const probe of probes) {
              const d = await limiter.peek(probe);
              out.push(d.access === undefined ? undefined : `${d.access.list} ${d.access.entry}`);
            }
            return out;
          };
          expect(await said(onRedis)).toEqual(await said(inMemory));
          expect((await onRedis.accessList()).map((e) => [e.entry, e.list])).toEqual(
            (await inMemory.accessList()).map((e) => [e.entry, e.list]),
          );
        }),
        { numRuns: 25 },
      );
    });
  });

  it(`at most ${MAX_ACCESS_ENTRIES} entries on Redis too: past them a change is refused whole, a typed error`, async () => {
    await withTwo(async (a) => {
      for (let start = 0; start < MAX_ACCESS_ENTRIES; start += 10_000)
        await a.deny(Array.from({ length: 10_000 }, (_, i) => `k${start + i}`));
      await expect(a.deny(['one more'])).rejects.toMatchObject({ name: 'SluiceRangeError', argument: 'entries' });
      expect((await a.accessList()).length).toBe(MAX_ACCESS_ENTRIES);
      expect((await a.tryAcquire('k99999')).access?.list).toBe('deny');
      expect((await a.tryAcquire('one more')).access).toBeUndefined();
    });
  }, 60_000);
});
