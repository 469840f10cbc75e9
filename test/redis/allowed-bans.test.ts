/**
 * Bans against the allow list on Redis: an operator's `block()` outranks it on every node, a rule's own
 * `blockMs` ban does not (the allowed key skips its rules); as on the memory store (allowed-bans.test.ts in core).
 */
import { type Limiter, createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let n = 0;
const HEARD = { timeout: 5_000, interval: 10 };

async function withTwo(body: (a: Limiter, b: Limiter) => Promise<void>) {
  const clients = [new Redis(testRedis().server.url), new Redis(testRedis().server.url)];
  const stores = clients.map((redis) => redisStore({ redis }));
  const prefix = `bans-${process.pid}-${++n}`;
  const [a, b] = stores.map((store) =>
    createLimiter({
      rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000, blockMs: 600_000 }),
      store,
      prefix,
    }),
  ) as [Limiter, Limiter];
  try {
    await Promise.all([a.ready(), b.ready()]);
    await body(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
    await Promise.all(stores.map((store) => store.close()));
    for (const client of clients) client.disconnect();
  }
}

describe('bans and the allow list on Redis', () => {
  it("a rule's blockMs ban gives way to the allow list on every node; an explicit block() does not", async () => {
    await withTwo(async (a, b) => {
      for (let i = 0; i < 3; i++) await a.tryAcquire('p'); // the third denial starts the rule's 10-minute ban
      expect((await b.tryAcquire('p')).blocked).toBe(true);
      await a.allow('p');
      for (const node of [a, b])
        await vi.waitFor(async () => expect((await node.tryAcquire('p')).access?.list).toBe('allow'), HEARD);
      expect((await b.peek('p')).allowed).toBe(true);
      await a.block('p', 60_000);
      for (const node of [a, b]) {
        expect(await node.tryAcquire('p')).toMatchObject({ allowed: false, blocked: true });
        expect(await node.peek('p')).toMatchObject({ allowed: false, blocked: true });
      }
      await b.unblock('p');
      expect((await a.tryAcquire('p')).access?.list).toBe('allow');
    });
  });
});
