/**
 * Live limits on Redis (limiter.reconfigure in exact mode): the configuration is stored in Redis with a
 * version every decision checks, so a node's next decision after another node's change obeys it, with what
 * each key used carried to the new rules; two changes at once end in one of them; the carry is the memory
 * store's, decision for decision, on random rules and histories; bad records and an unreachable Redis are
 * typed errors and the fail mode, never a mix.
 */
import {
  type Algorithm,
  type CarryMode,
  type Limiter,
  ManualClock,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import { type RedisStore, redisStore } from '@sluice/redis';
import { ALGORITHMS, ALGORITHM_KINDS, type HistoryStep, historyArb } from '@sluice/test-kit';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { configKey, versionKey } from '../../packages/redis/src/key-layout.js';
import {
  MAX_LINKS,
  MAX_OVERRIDE_RULES,
  encodeConfig,
  firstConfig,
  reconfigured,
} from '../../packages/core/src/modes/live/config-record.js';
import { CLIENT_KINDS, openClient } from '../harness/clients.js';
import { nextEvent } from '../harness/events.js';
import { type TwoNodes, liveBucket, liveDeployments, livePrefix, withTwoNodes } from '../harness/live-nodes.js';
import { otherProcess, serverEnv } from '../harness/live-process.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';
import { CARRY_MODES } from '../../packages/core/src/algorithms/carry.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();

/** Grants of `count` single-permit decisions for `key`, one at a time. */
async function grants(limiter: Limiter, key: string, count: number): Promise<number> {
  let granted = 0;
  for (let i = 0; i < count; i++) if ((await limiter.tryAcquire(key)).allowed) granted++;
  return granted;
}

const deployments = liveDeployments(testRedis, testCluster);

describe.each(deployments)('exact mode on a $name server', ({ open }) => {
  /** Two exact-mode nodes of a limiter of liveBucket(capacity), their deny caches on or off. */
  const onTwoNodes = (capacity: number, denyCache: boolean, body: (nodes: TwoNodes<RedisStore>) => Promise<void>) =>
    withTwoNodes(open, (redis) => redisStore({ redis, denyCache }), liveBucket(capacity), body);

  it.each([false, true])(
    "one node reconfigures, the other's next decision obeys it with what was used (deny cache %s)",
    async (denyCache) => {
      await onTwoNodes(100, denyCache, async ({ a, b, stores }) => {
        expect(await grants(a, 'k', 60)).toBe(60);
        expect(await grants(b, 'k', 1)).toBe(1); // b's deny cache may hold a denial only under the rules it knew
        // 61 used of an old 100 leaves nothing of a new 50 ...
        const heard = denyCache ? nextEvent(stores[1], 'reconfigured') : undefined;
        // A version is Redis's time of the change (or one more than the last): never one that named another.
        const { version } = await a.reconfigure(liveBucket(50));
        expect(version).toBeGreaterThan(1);
        await heard;
        const denied = await b.tryAcquire('k');
        expect(denied).toMatchObject({ allowed: false, limit: 50, configVersion: version });
        expect(b.configVersion).toBe(version);
        expect(b.rules[0]?.limit).toBe(50);
        // ... and 139 of a new 200.
        const heardAgain = denyCache ? nextEvent(stores[1], 'reconfigured') : undefined;
        await a.reconfigure(liveBucket(200));
        await heardAgain;
        expect(await grants(b, 'k', 300)).toBe(139);
        expect(await grants(a, 'k', 5)).toBe(0);
        expect(a.configVersion).toBeGreaterThan(version);
        expect(b.rules[0]?.limit).toBe(200);
      });
    },
  );

  it('two nodes reconfiguring at once end in one of the two configurations, on both nodes', async () => {
    await onTwoNodes(100, false, async ({ a, b }) => {
      expect(await grants(a, 'k', 10)).toBe(10);
      const results = await Promise.allSettled([a.reconfigure(liveBucket(30)), b.reconfigure(liveBucket(70))]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'CONFLICT' });
      const winner = (won[0] as PromiseFulfilledResult<{ version: number; rules: readonly Algorithm[] }>).value;
      expect((lost[0] as PromiseRejectedResult).reason.message).toMatch(`version ${winner.version} is in force`);
      const limit = winner.rules[0]?.limit as number;
      // Both decide under the winner's rules: exactly its limit less the 10 used, over both nodes.
      expect((await grants(a, 'k', 1)) + (await grants(b, 'k', 200)) + (await grants(a, 'k', 200))).toBe(limit - 10);
      expect([a.configVersion, b.configVersion]).toEqual([winner.version, winner.version]);
      expect([a.rules[0]?.limit, b.rules[0]?.limit]).toEqual([limit, limit]);
    });
  });

  it("an override on one node: the other's next decision for that key obeys it, other keys keep the limiter's rules; removed, the key returns with what it used", async () => {
    await onTwoNodes(100, true, async ({ a, b }) => {
      expect(await grants(a, 'acme', 60)).toBe(60);
      expect(await grants(b, 'other', 1)).toBe(1);
      await a.override('acme', liveBucket(300));
      // 60 used of an override of 300: exactly 240 more, on either node, marked as the override's.
      expect(await b.tryAcquire('acme')).toMatchObject({ allowed: true, limit: 300, override: true });
      expect((await grants(b, 'acme', 100)) + (await grants(a, 'acme', 200))).toBe(239);
      expect(await b.tryAcquire('other')).toMatchObject({ allowed: true, limit: 100 });
      expect((await b.overrides()).overrides.map((o) => [o.key, o.rules[0]?.limit])).toEqual([['acme', 300]]);
      await a.removeOverride('acme');
      // Back to the limiter's 100 with 300 used: nothing left; the limiter's rules change again: 50 of 350.
      const denied = await b.tryAcquire('acme');
      expect(denied).toMatchObject({ allowed: false, limit: 100 });
      expect(denied.override).toBeUndefined();
      await b.reconfigure(liveBucket(350));
      expect(await grants(a, 'acme', 100)).toBe(50);
      expect((await a.overrides()).overrides).toEqual([]);
    });
  });

  it('controls on a node that has not decided since another changed the rules act under the new ones', async () => {
    await onTwoNodes(10, false, async ({ a, b }) => {
      expect(await grants(a, 'k', 10)).toBe(10);
      expect(await grants(a, 'j', 10)).toBe(10);
      const { version } = await a.reconfigure(liveBucket(20));
      // b still knows version 1: its reset and penalty must reach the states the new version keeps.
      await b.reset('k');
      await b.penalize('j', 5);
      expect(b.configVersion).toBe(version);
      expect(await grants(a, 'k', 30)).toBe(20);
      expect(await grants(a, 'j', 30)).toBe(5);
    });
  });

  it('a reset after a change forgets the key under every generation (nothing is carried back)', async () => {
    await onTwoNodes(10, false, async ({ a, b }) => {
      expect(await grants(a, 'k', 10)).toBe(10);
      await a.reconfigure(liveBucket(20));
      await b.reset('k');
      expect(await grants(a, 'k', 30)).toBe(20);
    });
  });
});

describe.each(deployments)('two processes on a $name server', ({ name, open }) => {
  it("one reconfigures; the other's next decision obeys it, counts exact", async () => {
    const prefix = livePrefix();
    const env = serverEnv(name, testRedis, testCluster);
    // No deny cache there: its next decision asks Redis (a denial it cached before a change would hold until
    // the change's message arrives; the deny-cache case is above, waiting for that message).
    const other = otherProcess({ ...env, PREFIX: prefix, MODE: 'exact', CAPACITY: '100', DENY_CACHE: '0' });
    const client = open();
    const here = createLimiter({ rules: liveBucket(100), store: redisStore({ redis: client }), prefix });
    try {
      await other.ready();
      expect(await grants(here, 'k', 60)).toBe(60);
      expect(await other.decide(10, 'k')).toMatchObject({ granted: 10, version: 1, limit: 100 });
      const second = await here.reconfigure(liveBucket(200));
      // 70 used of 200: the other process grants exactly 130 more, under the second version.
      expect(await other.decide(200, 'k')).toMatchObject({ granted: 130, version: second.version, limit: 200 });
      const third = await here.reconfigure(liveBucket(50), { carry: 'fresh' });
      // Fresh: the key starts full under the new rules, shared by both processes.
      expect(await other.decide(30, 'k')).toMatchObject({ granted: 30, version: third.version, limit: 50 });
      expect(await grants(here, 'k', 30)).toBe(20);
    } finally {
      other.stop();
      await here.close();
      client.disconnect();
    }
  });
});

describe('the configuration record', () => {
  it('a record of a later format is refused with a typed error naming it; a node told of it decides by its fail mode and says so', async () => {
    const { server, redis } = testRedis();
    const prefix = livePrefix();
    await redis.set(configKey(prefix), `5\n${JSON.stringify({ format: 99, rules: [] })}`);
    const client = new Redis(server.url);
    const store = redisStore({ redis: client, failMode: 'closed' });
    const limiter = createLimiter({ rules: liveBucket(10), store, prefix });
    try {
      await expect(limiter.ready()).rejects.toMatchObject({
        code: 'UNSUPPORTED',
        message: expect.stringMatching(/format 99/),
      });
      // A slot that says version 5: the node cannot read it, keeps what it knew, and decides by its fail mode.
      await redis.set(versionKey(prefix, undefined), '5');
      const failed = nextEvent(store, 'store-error');
      const decision = await limiter.tryAcquire('k');
      expect(decision).toMatchObject({ allowed: false, source: 'fallback' });
      expect((await failed)[0]).toMatchObject({ code: 'UNSUPPORTED' });
      expect(limiter.configVersion).toBe(1);
    } finally {
      await limiter.close();
      client.disconnect();
    }
  });

  it('a slot ahead of a readable record (stored again lower, or lost): the record is stored again above the slot, once; every node decides under it', async () => {
    const { server, redis } = testRedis();
    const prefix = livePrefix();
    // A record at version 5 (limit 7) beside a slot at 9: what a loss leaves when a node that knew 9 decided.
    await redis.set(
      configKey(prefix),
      encodeConfig(reconfigured(firstConfig([liveBucket(10)]), [liveBucket(7)], 'used', 5, 0)),
    );
    await redis.set(versionKey(prefix, undefined), '9');
    const client = new Redis(server.url);
    const store = redisStore({ redis: client, failMode: 'closed' });
    const errors: Error[] = [];
    store.on('store-error', (error) => void errors.push(error));
    const limiter = createLimiter({ rules: liveBucket(10), store, prefix });
    try {
      const first = await limiter.tryAcquire('k');
      expect(first).toMatchObject({ allowed: true, limit: 7 });
      expect(first.source).toBeUndefined();
      expect(limiter.configVersion).toBeGreaterThan(9);
      expect(Number((await redis.get(configKey(prefix)))?.split('\n')[0])).toBe(limiter.configVersion);
      expect(await grants(limiter, 'k', 10)).toBe(6);
      expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['STORE_MISCONFIGURED']);
    } finally {
      await limiter.close();
      client.disconnect();
    }
  });

  it.each(CLIENT_KINDS)(
    'through %s: the record and Redis time are read, a change numbered from them, a lost record stored again',
    async (kind) => {
      const { server, redis } = testRedis();
      const prefix = livePrefix();
      const open = await openClient(kind, server);
      const limiter = createLimiter({ rules: liveBucket(10), store: redisStore({ redis: open.client }), prefix });
      try {
        const { version } = await limiter.reconfigure(liveBucket(20));
        const [seconds] = await redis.time();
        expect(version).toBeGreaterThan(1);
        expect(version).toBeLessThanOrEqual(Number(seconds) * 1000 + 1000);
        await redis.del(configKey(prefix));
        const next = await limiter.reconfigure(liveBucket(30));
        expect(next.version).toBeGreaterThan(version);
        expect(Number((await redis.get(configKey(prefix)))?.split('\n')[0])).toBe(next.version);
      } finally {
        await limiter.close();
        await open.close();
      }
    },
  );

  it('bad rules change nothing: a new kind under a rule name, then Redis away (STORE_UNAVAILABLE)', async () => {
    const { server } = testRedis();
    const client = new Redis(server.url, { maxRetriesPerRequest: 0 });
    const store = redisStore({ redis: client, timeoutMs: 200 });
    const limiter = createLimiter({ rules: liveBucket(10), store, prefix: livePrefix() });
    try {
      expect(await grants(limiter, 'k', 4)).toBe(4);
      await expect(limiter.reconfigure(fixedWindow({ name: 'api', limit: 5, windowMs: 1000 }))).rejects.toMatchObject({
        name: 'SluiceRangeError',
        message: expect.stringMatching(/"api".*tokenBucket.*fixedWindow/),
      });
      expect(limiter.configVersion).toBe(1);
      client.disconnect();
      await expect(limiter.reconfigure(liveBucket(20))).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(limiter.configVersion).toBe(1);
      expect(limiter.rules[0]?.limit).toBe(10);
    } finally {
      await limiter.close();
    }
  });
});

/** Sizes and times small enough for a decision a step, large enough to cross windows and refills. */
const liveCase = fc.constantFrom(...ALGORITHM_KINDS).chain((kind) =>
  fc.record({
    kind: fc.constant(kind),
    before: ALGORITHMS[kind].shapes,
    after: ALGORITHMS[kind].shapes,
    oldLimit: fc.integer({ min: 1, max: 30 }),
    newLimit: fc.integer({ min: 1, max: 30 }),
    mode: fc.constantFrom<CarryMode>(...CARRY_MODES),
    start: fc.integer({ min: 0, max: 2_000_000_000_000 }),
    history: historyArb(15, 2_000, 4),
    later: historyArb(15, 2_000, 4),
    firstTouchMs: fc.integer({ min: 0, max: 500 }),
  }),
);

/** Runs `steps` on a limiter, a decision (or a penalty) each, and what each said. */
async function run(limiter: Limiter, clock: ManualClock, steps: readonly HistoryStep[]): Promise<unknown[]> {
  const seen: unknown[] = [];
  for (const [dt, permits, penalty] of steps) {
    clock.advance(dt);
    if (penalty) {
      await limiter.penalize('k', permits);
      seen.push('penalized');
    } else {
      seen.push(said(await limiter.tryAcquire('k', { permits })));
    }
  }
  return seen;
}

/** What a decision says, for comparing two stores. */
const said = (d: { allowed: boolean; remaining: number; override?: true }) => [d.allowed, d.remaining, d.override];

describe('live limits on Redis decide as on the memory store', () => {
  it('a key idle through many changes carries what it used from its oldest generation, as on the memory store; past MAX_LINKS a change is refused, nothing dropped', async () => {
    const { server } = testRedis();
    const client = new Redis(server.url);
    const clocks = [new ManualClock(1_000), new ManualClock(1_000)] as const;
    // A day's allowance: a bucket of `limit` refilled over a day (the case was a day's window).
    const daily = (limit: number) => tokenBucket({ name: 'r', capacity: limit, refillPerSecond: limit / 86_400 });
    const prefix = livePrefix();
    const memory = createLimiter({ rules: daily(11), store: memoryStore({ clock: clocks[0] }), prefix });
    const onRedis = createLimiter({
      rules: daily(11),
      store: redisStore({ redis: client, clock: clocks[1], denyCache: false }),
      prefix,
    });
    try {
      for (const limiter of [memory, onRedis]) expect(await grants(limiter, 'k', 11)).toBe(11);
      // Five changes, the key idle through all: its 11 used are still in its first generation's state.
      for (const limit of [10, 11, 10, 11, 10]) {
        for (const [i, limiter] of [memory, onRedis].entries()) {
          clocks[i]?.advance(1_000);
          await limiter.reconfigure(daily(limit));
        }
      }
      // A day's allowance never above 11: nothing more today (before: Redis had dropped the oldest generation
      // and granted 10 more, 21 in the day).
      expect([await grants(memory, 'k', 30), await grants(onRedis, 'k', 30)]).toEqual([0, 0]);
      // The key idle through every change the record can carry: the change past them is refused.
      for (let i = 0; i < MAX_LINKS - 5; i++) await onRedis.reconfigure(daily(20 + i));
      const version = onRedis.configVersion;
      await expect(onRedis.reconfigure(daily(5))).rejects.toMatchObject({
        code: 'UNSUPPORTED',
        message: expect.stringMatching(/stops mattering/),
      });
      expect([onRedis.configVersion, onRedis.rules[0]?.limit]).toEqual([version, 20 + MAX_LINKS - 6]);
      // Still carried from the first generation through all of them: 11 used of 46, 35 left.
      expect(await grants(onRedis, 'k', 50)).toBe(20 + MAX_LINKS - 6 - 11);
    } finally {
      await Promise.all([memory.close(), onRedis.close()]);
      client.disconnect();
    }
  });

  it('an override holds at most MAX_OVERRIDE_RULES rules (a typed error; nothing stored)', async () => {
    const { server } = testRedis();
    const client = new Redis(server.url);
    const limiter = createLimiter({
      rules: liveBucket(10),
      store: redisStore({ redis: client }),
      prefix: livePrefix(),
    });
    try {
      const many = Array.from({ length: MAX_OVERRIDE_RULES + 1 }, (_, i) =>
        fixedWindow({ name: `r${i}`, limit: 5, windowMs: 60_000 + i }),
      );
      await expect(limiter.override('acme', many)).rejects.toMatchObject({
        name: 'SluiceRangeError',
        message: expect.stringMatching(/at most 16 rules/),
      });
      expect((await limiter.overrides()).overrides).toEqual([]);
      expect(limiter.configVersion).toBe(1);
      await limiter.override('acme', many.slice(0, MAX_OVERRIDE_RULES));
      expect((await limiter.overrides()).overrides.map((o) => o.rules.length)).toEqual([MAX_OVERRIDE_RULES]);
    } finally {
      await limiter.close();
      client.disconnect();
    }
  });

  it('random rules, histories and carry modes: every decision after a change, an override and its removal is the same on both', async () => {
    const { server } = testRedis();
    const client = new Redis(server.url);
    try {
      await fc.assert(
        fc.asyncProperty(liveCase, async (c) => {
          const rules = (shape: (typeof c)['before'], limit: number) => shape(limit, { name: 'r' });
          const clocks = [new ManualClock(c.start), new ManualClock(c.start)] as const;
          const prefix = livePrefix();
          const memory = createLimiter({
            rules: rules(c.before, c.oldLimit),
            store: memoryStore({ clock: clocks[0] }),
            prefix,
          });
          const onRedis = createLimiter({
            rules: rules(c.before, c.oldLimit),
            store: redisStore({ redis: client, clock: clocks[1], denyCache: false }),
            prefix,
          });
          try {
            const before = await Promise.all([run(memory, clocks[0], c.history), run(onRedis, clocks[1], c.history)]);
            expect(before[1]).toEqual(before[0]);
            const next = rules(c.after, c.newLimit);
            await memory.reconfigure(next, { carry: c.mode });
            await onRedis.reconfigure(next, { carry: c.mode });
            const later: HistoryStep[] = [[c.firstTouchMs, 1, false], ...c.later];
            const after = await Promise.all([run(memory, clocks[0], later), run(onRedis, clocks[1], later)]);
            expect(after[1]).toEqual(after[0]);
            // The key's own rules (the ones before, at their old limit), then back to the limiter's.
            const own = rules(c.before, c.oldLimit);
            await memory.override('k', own);
            await onRedis.override('k', own);
            const owned = await Promise.all([run(memory, clocks[0], later), run(onRedis, clocks[1], later)]);
            expect(owned[1]).toEqual(owned[0]);
            await memory.removeOverride('k');
            await onRedis.removeOverride('k');
            const back = await Promise.all([run(memory, clocks[0], later), run(onRedis, clocks[1], later)]);
            expect(back[1]).toEqual(back[0]);
          } finally {
            await Promise.all([memory.close(), onRedis.close()]);
          }
        }),
        { numRuns: 40, ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }) },
      );
    } finally {
      client.disconnect();
    }
  });
});
