/**
 * Allow and deny lists on Redis: what one node adds holds on another within a second (its message heard), a
 * missed message heals at the next version check, random changes decide the same on Redis as in memory,
 * and the lists are bounded on Redis as in memory. A version never names two contents (a restart without
 * persistence, a FLUSHALL); expiry is Redis's clock, whatever the writer's or the reader's says; a ban
 * outranks the allow list on every node.
 */
import {
  type Clock,
  type Limiter,
  ManualClock,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import { runCli } from '@sluice/cli';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { RedisAccessLists, StartupChecks, toConnection } from '@sluice/redis/internal';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { accessListKeys } from '../../packages/redis/src/key-layout.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';
import { withTwoLimiters } from '../harness/two-limiters.js';
import { useTestRedis } from '../harness/use-redis.js';
import { MAX_ACCESS_ENTRIES } from '../../packages/core/src/engine/access-list-store.js';

const testRedis = useTestRedis();
let n = 0;
/** How long a change may take to be heard (a message, or a read): waited for as an event, never slept. */
const HEARD = { timeout: 5_000, interval: 10 };

/**
 * Two limiters of one prefix, each on its own client and redisStore (deciding on `clocks[i]`, Redis TIME
 * when absent), ready; closed after `body`.
 */
async function withTwo(
  body: (a: Limiter, b: Limiter, prefix: string) => Promise<void>,
  refreshMs?: number,
  { server = testRedis().server, clocks = [] }: { server?: TestRedis; clocks?: (Clock | undefined)[] } = {},
) {
  const rules = fixedWindow({ name: 'api', limit: 3, windowMs: 60_000 });
  await withTwoLimiters({ url: server.url, rules, stem: 'lists', refreshMs, clocks }, body);
}

describe('access lists on Redis', () => {
  it('a CIDR range denied on one node holds on the other within a second; removed, it lets go there too', async () => {
    await withTwo(async (a, b) => {
      expect((await b.tryAcquire('ip:198.51.100.7', { address: '198.51.100.7' })).allowed).toBe(true);
      await a.deny('198.51.100.0/24', { reason: 'scanner' });
      const from = performance.now();
      await vi.waitFor(
        async () =>
          expect((await b.tryAcquire('ip:198.51.100.7', { address: '198.51.100.7' })).access?.list).toBe('deny'),
        {
          timeout: 1_000,
          interval: 5,
        },
      );
      expect(performance.now() - from).toBeLessThan(1_000);
      expect(await b.accessList()).toEqual([{ entry: '198.51.100.0/24', list: 'deny', reason: 'scanner' }]);
      expect(await b.unlist('198.51.100.0/24')).toBe(1);
      await vi.waitFor(
        async () => expect((await a.tryAcquire('ip:198.51.100.7', { address: '198.51.100.7' })).access).toBeUndefined(),
        {
          timeout: 1_000,
          interval: 5,
        },
      );
    });
  });

  it('a change whose message was missed holds from the next version check (refreshMs)', async () => {
    await withTwo(async (a, _b, prefix) => {
      const [entries, version] = accessListKeys(prefix);
      const { redis } = testRedis();
      // As access_list.lua writes it, without the message.
      await redis.hset(entries, 'ghost', 'deny\n\nmissed');
      await redis.set(version, `${await redis.get(version)}-missed`);
      await vi.waitFor(
        async () =>
          expect((await a.tryAcquire('ghost')).access).toEqual({ list: 'deny', entry: 'ghost', reason: 'missed' }),
        { timeout: 2_000, interval: 20 },
      );
    }, 200);
  });

  it('random allows, denies, removals and expiries decide every probe the same on Redis as in memory', async () => {
    const entryArb = fc.constantFrom(
      'k1',
      'k2',
      '10.0.0.0/8',
      '10.1.0.0/16',
      '10.1.2.3',
      '2001:db8::/32',
      '2001:db8::5',
      '2001:db8:0:1::/64',
      '::1',
    );
    const stepArb = fc.oneof(
      fc.record({ op: fc.constantFrom('allow' as const, 'deny' as const), entry: entryArb, ttl: fc.boolean() }),
      fc.record({ op: fc.constant('unlist' as const), entry: entryArb, ttl: fc.constant(false) }),
    );
    // A key and the client's address (a key shaped like an address is only a key).
    const probes: [string, string | undefined][] = [
      ['k1', undefined],
      ['k2', '10.1.2.3'],
      ['10.9.9.9', undefined],
      ['x', '10.9.9.9'],
      ['x', '10.1.9.9'],
      ['x', '10.1.2.3'],
      ['ip:2001:db8::/56', '2001:db8::5'],
      ['ip:2001:db8::/56', '2001:db8:0:1::7'],
      ['x', '::1'],
      ['k1', '::ffff:10.1.2.3'],
      ['x', undefined],
    ];
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
            for (const [key, address] of probes) {
              const d = await limiter.peek(key, address === undefined ? {} : { address });
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

/** A throwaway redis-server (no persistence) of this test's own, stopped after `body`. */
async function withOwnServer(body: (server: { current: TestRedis }) => Promise<void>) {
  const server = { current: await spawnRedisServer() };
  try {
    await body(server);
  } finally {
    await server.current.stop();
  }
}

/** The lists of `prefix` read straight from Redis, as the CLI binds them. */
function listsOf(redis: Redis, prefix: string) {
  const connection = toConnection(redis);
  return new RedisAccessLists({
    connection,
    timeoutMs: 5_000,
    checks: new StartupChecks(connection, 5_000, () => {}),
    channels: undefined,
  }).bind(prefix);
}

describe('access lists on Redis: versions, clocks, bans', () => {
  it('after FLUSHALL the version never names the old contents: a node that knew it reads the new list', async () => {
    await withOwnServer(async (server) => {
      await withTwo(
        async (a, b) => {
          await a.deny('old');
          await vi.waitFor(async () => expect((await b.tryAcquire('old')).access?.list).toBe('deny'), HEARD);
          const redis = new Redis(server.current.url);
          await redis.flushall();
          redis.disconnect();
          // The same number of changes as before: a counter from 0 would be back at the version b knows.
          await a.deny('new');
          await vi.waitFor(async () => expect((await b.tryAcquire('new')).access?.list).toBe('deny'), HEARD);
          expect((await b.tryAcquire('old')).access).toBeUndefined();
          expect((await b.accessList()).map((e) => e.entry)).toEqual(['new']);
        },
        600_000,
        { server: server.current },
      );
    });
  });

  it('after a restart without persistence or a lagging failover, a reader that knew a version reads the list written since, never "unchanged"', async () => {
    await withOwnServer(async (server) => {
      const port = server.current.port;
      const redis = new Redis(server.current.url);
      redis.on('error', () => {});
      try {
        const prefix = 'restarted';
        const writer = listsOf(redis, prefix);
        await writer.put([{ entry: 'gone', list: 'deny' }]);
        const known = await writer.read();
        expect(known.entries?.map((e) => e.entry)).toEqual(['gone']);
        await server.current.stop();
        server.current = await spawnRedisServer([], { port });
        await writer.put([{ entry: 'fresh', list: 'deny' }]);
        // Before: the version was 1 again, and read(1) answered "unchanged": 'gone' held for good, 'fresh' never.
        const after = await writer.read(known.version);
        expect(after.version).not.toBe(known.version);
        expect(after.entries?.map((e) => e.entry)).toEqual(['fresh']);
        // A failover to a replica one change behind: Redis is back to an older state, and the next change must
        // not take the version of the one it lost (a count would: one more than the replica's).
        const [hash, version] = accessListKeys(prefix);
        const behind = await Promise.all([redis.dumpBuffer(hash), redis.dumpBuffer(version)]);
        await writer.put([{ entry: 'lost', list: 'deny' }]);
        const lost = await writer.read();
        await redis.restore(hash, 0, behind[0] as Buffer, 'REPLACE');
        await redis.restore(version, 0, behind[1] as Buffer, 'REPLACE');
        await writer.put([{ entry: 'later', list: 'allow' }]);
        const healed = await writer.read(lost.version);
        expect(healed.version).not.toBe(lost.version);
        expect(healed.entries?.map((e) => e.entry).sort()).toEqual(['fresh', 'later']);
        // Whatever the reader knew, a read of a list with no version stored carries its entries.
        await redis.flushall();
        expect(await writer.read('')).toMatchObject({ version: '', entries: [] });
      } finally {
        redis.disconnect();
      }
    });
  });

  it('two nodes across a restart without persistence: the re-listed deny holds on both, the removed one on neither', async () => {
    await withOwnServer(async (server) => {
      await withTwo(
        async (a, b) => {
          await a.deny(['stays', 'goes']);
          await vi.waitFor(async () => expect((await b.tryAcquire('goes')).access?.list).toBe('deny'), HEARD);
          const port = server.current.port;
          await server.current.stop();
          server.current = await spawnRedisServer([], { port });
          // The operator puts back what should hold (both nodes reconnect by themselves).
          await vi.waitFor(() => a.deny('stays'), { timeout: 10_000, interval: 50 });
          for (const node of [a, b]) {
            await vi.waitFor(
              async () => {
                expect((await node.tryAcquire('goes')).access).toBeUndefined();
                expect((await node.tryAcquire('stays')).access?.list).toBe('deny');
              },
              { timeout: 5_000, interval: 20 },
            );
          }
        },
        200,
        { server: server.current },
      );
    });
  }, 30_000);

  it("an entry's expiry is Redis TIME + ttl: a writer 20 minutes behind writes what any writer does, a reader ahead counts it on its own clock", async () => {
    const behind = new ManualClock(Date.now() - 20 * 60_000);
    const ahead = new ManualClock(Date.now() + 20 * 60_000);
    await withTwo(
      async (writer, reader) => {
        const { redis } = testRedis();
        const [seconds, micros] = await redis.time();
        const before = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
        await writer.deny('203.0.113.0/24', { ttlMs: 600_000, reason: 'incident' });
        const [entry] = await reader.accessList();
        expect(entry?.expiresAt).toBeGreaterThanOrEqual(before + 600_000);
        // Within a minute of the write (a loaded box's round trips), never the writer's 20 minutes off.
        expect(entry?.expiresAt).toBeLessThan(before + 600_000 + 60_000);
        // Before: the writer's clock set the expiry 10 minutes in the past, and no node ever enforced it.
        await vi.waitFor(
          async () =>
            expect((await reader.tryAcquire('ip:203.0.113.9', { address: '203.0.113.9' })).access?.list).toBe('deny'),
          HEARD,
        );
        const d = await reader.tryAcquire('k', { address: '203.0.113.9' });
        expect(d.retryAfterMs).toBeGreaterThan(540_000);
        expect(d.retryAfterMs).toBeLessThanOrEqual(600_000);
        ahead.advance(d.retryAfterMs);
        expect((await reader.tryAcquire('k', { address: '203.0.113.9' })).access).toBeUndefined();
        // The writer, behind, counts the same 10 minutes from its own read.
        expect((await writer.tryAcquire('k', { address: '203.0.113.9' })).access?.list).toBe('deny');
      },
      undefined,
      { clocks: [behind, ahead] },
    );
  });

  it('`sluice deny --ttl-ms` from a machine 20 minutes behind holds on the nodes for its ttl, by Redis TIME', async () => {
    await withTwo(async (a, b, prefix) => {
      const { server, redis } = testRedis();
      const out: string[] = [];
      const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(line), env: {} };
      // The CLI's machine: its clock 20 minutes behind (only Date: the CLI reads no other clock).
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 20 * 60_000 });
      let code: number;
      try {
        code = await runCli(
          [
            'deny',
            '203.0.113.0/24',
            '--ttl-ms',
            '600000',
            '--reason',
            'incident',
            '--prefix',
            prefix,
            '--url',
            server.url,
          ],
          io,
        );
      } finally {
        vi.useRealTimers();
      }
      expect([code, out]).toEqual([0, ['denied: 203.0.113.0/24']]);
      const [seconds] = await redis.time();
      // Before: the entry expired 10 minutes before it was written, and no node ever enforced it.
      for (const node of [a, b]) {
        await vi.waitFor(
          async () => expect((await node.tryAcquire('k', { address: '203.0.113.9' })).access?.reason).toBe('incident'),
          HEARD,
        );
        expect((await node.tryAcquire('k', { address: '203.0.113.9' })).retryAfterMs).toBeGreaterThan(540_000);
      }
      const [entry] = await a.accessList();
      expect(Math.abs((entry?.expiresAt ?? 0) - (Number(seconds) * 1_000 + 600_000))).toBeLessThan(60_000);
    });
  });

  it('the CLI path (a binding with no clock) and a node agree on expiry, and `lists` filters by Redis TIME', async () => {
    await withTwo(async (a, _b, prefix) => {
      const { redis } = testRedis();
      const cli = listsOf(redis, prefix);
      await cli.put([{ entry: 'short', list: 'deny', ttlMs: 1 }]);
      await cli.put([{ entry: 'long', list: 'deny', ttlMs: 3_600_000 }]);
      // 'short' is over by Redis TIME within a millisecond of its write: read as of the store's time.
      await vi.waitFor(async () => {
        const stored = await cli.read();
        expect(stored.entries?.find((e) => e.entry === 'short')?.expiresAt).toBeLessThanOrEqual(stored.now);
      }, HEARD);
      expect((await a.accessList()).map((e) => e.entry)).toEqual(['long']);
    });
  });

  it('a ban outranks the allow list on every node, peek says so; unblocked, the allow list decides again', async () => {
    await withTwo(async (a, b) => {
      await a.allow(['vip', '198.51.100.0/24']);
      await vi.waitFor(async () => expect((await b.tryAcquire('vip')).access?.list).toBe('allow'), HEARD);
      await a.block('vip', 60_000);
      await a.block('user:1', 60_000);
      expect(await a.tryAcquire('vip')).toMatchObject({ allowed: false, blocked: true }); // at once where set
      // Elsewhere once the node reads the slot's ban marker again (within BAN_MARKER_TRUST_MS): an event.
      await vi.waitFor(async () => expect((await b.tryAcquire('vip')).blocked).toBe(true), HEARD);
      for (const node of [a, b]) {
        expect(await node.tryAcquire('vip')).toMatchObject({ allowed: false, blocked: true });
        expect(await node.peek('vip')).toMatchObject({ allowed: false, blocked: true });
        expect(await node.tryAcquire('user:1', { address: '198.51.100.4' })).toMatchObject({ blocked: true });
        expect((await node.tryAcquire('user:2', { address: '198.51.100.4' })).access?.list).toBe('allow');
      }
      await b.unblock('vip');
      expect((await a.tryAcquire('vip')).access?.list).toBe('allow');
    });
  });
});

describe('access lists in every mode alike', () => {
  it('memory, exact, leased and divided: the same entries decide the same keys and addresses', async () => {
    const { server } = testRedis();
    const clients = [new Redis(server.url), new Redis(server.url), new Redis(server.url)];
    const stores = [
      memoryStore(),
      redisStore({ redis: clients[0] as Redis }),
      leasedStore({ redis: clients[1] as Redis }),
      dividedStore({ redis: clients[2] as Redis }),
    ];
    const limiters = stores.map((store, i) =>
      createLimiter({
        rules: tokenBucket({ name: 'api', capacity: 2, refillPerSecond: 0.001 }),
        store,
        prefix: `modes-${process.pid}-${++n}-${i}`,
      }),
    );
    try {
      const probes: [string, string | undefined][] = [
        ['10.0.7.1', undefined],
        ['k', '10.0.7.1'],
        ['k', '10.1.0.1'],
        ['partner', '203.0.113.7'],
        ['partner', undefined],
        ['ip:2001:db8::/56', '2001:db8::5'],
        ['ip:2001:db8::/56', '2001:db8::6'],
      ];
      const said: string[][] = [];
      for (const limiter of limiters) {
        await limiter.ready();
        await limiter.allow(['10.0.0.0/8', 'partner']);
        await limiter.deny(['10.1.0.0/16', '203.0.113.7', '2001:db8::5']);
        const mine: string[] = [];
        for (const [key, address] of probes) {
          const d = await limiter.tryAcquire(key, address === undefined ? {} : { address });
          mine.push(`${d.allowed} ${d.access?.entry ?? '-'}`);
        }
        said.push(mine);
      }
      expect(said[0]).toEqual([
        'true -',
        'true 10.0.0.0/8',
        'false 10.1.0.0/16',
        'false 203.0.113.7',
        'true partner',
        'false 2001:db8::5',
        'true -',
      ]);
      for (const other of said.slice(1)) expect(other).toEqual(said[0]);
    } finally {
      await Promise.all(limiters.map((l) => l.close()));
      await Promise.all(stores.map((s) => s.close()));
      for (const client of clients) client.disconnect();
    }
  });
});

describe('access lists while Redis is away', () => {
  it.each(['local', 'open', 'closed'] as const)(
    'failMode %s: an allowed key is still allowed and a denied one denied (no allowed request waits on Redis for its ban)',
    async (failMode) => {
      await withOwnServer(async (server) => {
        const redis = new Redis(server.current.url, { maxRetriesPerRequest: 1 });
        redis.on('error', () => {});
        const store = redisStore({ redis, failMode, timeoutMs: 100 });
        const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 1, windowMs: 60_000 }), store });
        try {
          await limiter.ready();
          await limiter.allow('vip');
          await limiter.deny('203.0.113.0/24');
          server.current.process?.kill('SIGSTOP');
          for (let i = 0; i < 3; i++) {
            expect((await limiter.tryAcquire('vip')).access?.list).toBe('allow');
            expect((await limiter.tryAcquire('k', { address: '203.0.113.1' })).allowed).toBe(false);
          }
        } finally {
          server.current.process?.kill('SIGCONT');
          await limiter.close();
          await store.close();
          redis.disconnect();
        }
      });
    },
  );
});
