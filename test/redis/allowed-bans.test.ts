/**
 * Bans against the allow list on Redis: an operator's `block()` outranks it on every node, a rule's own
 * `blockMs` ban does not (the allowed key skips its rules); as on the memory store (allowed-bans.test.ts in core).
 */
import { type Limiter, createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { describe, expect, it, vi } from 'vitest';
import { withTwoLimiters } from '../harness/two-limiters.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();
const HEARD = { timeout: 5_000, interval: 10 };

async function withTwo(body: (a: Limiter, b: Limiter) => Promise<void>) {
  const rules = fixedWindow({ name: 'api', limit: 2, windowMs: 60_000, blockMs: 600_000 });
  await withTwoLimiters({ url: testRedis().server.url, rules, stem: 'bans' }, body);
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

  it("this node's own block() of an allowed key holds at once, though a read of its ban marker was out", async () => {
    await withTwo(async (a) => {
      await a.allow('vip');
      // The first allowed decision reads the slot's ban marker (absent); the block is made while it is out,
      // and the older read must not replace what the block raised (it did: allowed for a second more).
      const inFlight = a.tryAcquire('vip');
      await a.block('vip', 60_000);
      await inFlight;
      expect(await a.tryAcquire('vip')).toMatchObject({ allowed: false, blocked: true });
    });
  });
});

describe('what an allowed key costs on Redis', () => {
  /** FCALLs the server ran during `body` (INFO commandstats; the suite's own server, nothing else on it). */
  async function fcalls(body: () => Promise<void>): Promise<number> {
    const { redis } = testRedis();
    await redis.config('RESETSTAT');
    await body();
    const stats = await redis.info('commandstats');
    return Number(/cmdstat_fcall:calls=(\d+)/.exec(stats)?.[1] ?? 0);
  }

  it('no script call while no ban was written in its slot; with an explicit ban, one read per decision', async () => {
    await withTwo(async (a, b) => {
      await a.allow(['svc:health', 'svc:banned']);
      await vi.waitFor(async () => expect((await b.tryAcquire('svc:health')).access?.list).toBe('allow'), HEARD);
      await b.tryAcquire('svc:health'); // the marker read once
      const free = await fcalls(async () => {
        for (let i = 0; i < 2_000; i++) expect((await b.tryAcquire('svc:health')).allowed).toBe(true);
      });
      expect(free).toBe(0);
      await a.block('svc:banned', 600_000);
      // Another node's ban is seen once its marker read is BAN_MARKER_TRUST_MS old: waited for as an event.
      await vi.waitFor(async () => expect((await b.tryAcquire('svc:banned')).blocked).toBe(true), HEARD);
      const banned = await fcalls(async () => {
        for (let i = 0; i < 200; i++) expect((await b.tryAcquire('svc:banned')).blocked).toBe(true);
      });
      expect(banned).toBe(200);
    });
  });
});

describe('bans and the allow list on a Cluster', () => {
  it("a rule's ban gives way, an explicit one holds: one rule, and a policy whose rules live in other slots", async () => {
    const store = redisStore({ redis: testCluster().client });
    const one = fixedWindow({ name: 'api', limit: 2, windowMs: 60_000, blockMs: 600_000 });
    const global = fixedWindow({ name: 'global', limit: 1_000, windowMs: 60_000, scope: 'all' });
    const limiters = [
      createLimiter({ rules: one, store, prefix: `cb-one-${process.pid}` }),
      createLimiter({ rules: [one, global], store, prefix: `cb-policy-${process.pid}` }),
    ];
    try {
      for (const l of limiters) {
        await l.ready();
        for (let i = 0; i < 3; i++) await l.tryAcquire('p');
        expect((await l.tryAcquire('p')).blocked, l.prefix).toBe(true);
        await l.allow(['p', 'q']);
        expect((await l.tryAcquire('p')).access?.list, l.prefix).toBe('allow');
        await l.block('q', 60_000);
        expect(await l.tryAcquire('q'), l.prefix).toMatchObject({ allowed: false, blocked: true });
        expect((await l.peek('q')).blocked, l.prefix).toBe(true);
      }
    } finally {
      await Promise.all(limiters.map((l) => l.close()));
      await store.close();
    }
  });
});
