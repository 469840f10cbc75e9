import {
  type Algorithm,
  type AlgorithmKind,
  ManualClock,
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '@sluice/core';
import { stateName } from '@sluice/core/internal';
import { type FleetEvent, type RedisStore, redisStore } from '@sluice/redis';
import { banKey, banMarkerKey, stateKey } from '../../packages/redis/src/key-layout.js';
import { bufferReply, runScript } from '../../packages/redis/src/script-runner.js';
import { adjustArgs, ruleArgs } from '../../packages/redis/src/exact/rule-args.js';
import {
  adjustScript,
  blockScript,
  decideOneScript,
  decideScript,
  leaseScript,
  membershipScript,
  semaphoreScript,
} from '../../packages/redis/src/scripts.js';
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { type WireDecision, packGroups, packRequests, unpackReplies } from '../../packages/redis/src/exact/protocol.js';
import { type TestRedis, startTestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { ALGORITHM_KINDS, everyAlgorithm as everyRegistered } from '@sluice/test-kit';
import { nextEvent } from '../harness/events.js';

const testRedis = useTestRedis();
let server: TestRedis;
let redis: Redis;
beforeAll(() => void ({ server, redis } = testRedis()));
let n = 0;
const prefix = () => `store${++n}`;

/** One rule of every algorithm (the registry's): `limit` permits, windows of `windowMs`, rates of `perSecond`. */
const everyAlgorithm = (limit: number, windowMs: number, perSecond: number): Algorithm[] =>
  everyRegistered({ limit, windowMs, perSecond });

/** Script calls the test server ran, whichever way they were sent (EVALSHA, EVAL or FCALL). */
async function scriptCalls(): Promise<number> {
  return (await commandCalls('evalsha')) + (await commandCalls('eval')) + (await commandCalls('fcall'));
}

/** The function libraries the test server holds, by name. */
async function libraries(): Promise<string[]> {
  const list = (await redis.call('FUNCTION', 'LIST')) as unknown[][];
  return list.map((library) => String(library[1]));
}

async function commandCalls(command: string): Promise<number> {
  const info = await redis.info('commandstats');
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info);
  return match ? Number(match[1]) : 0;
}

describe('the decide script', () => {
  it('is named by the sha1 that SCRIPT LOAD gives its source', async () => {
    const script = decideScript();
    expect(await redis.script('LOAD', script.source)).toBe(script.sha1);
  });

  const rules: Array<[Algorithm, string]> = [
    [fixedWindow({ limit: 5, windowMs: 10_000 }), 'windowStart count'],
    [slidingWindowLog({ limit: 5, windowMs: 10_000 }), 't n'],
    [slidingWindowCounter({ limit: 5, windowMs: 10_000 }), 'windowStart previous current'],
    [tokenBucket({ capacity: 5, refillPerSecond: 1 }), 'tokens updatedAt'],
    [leakyBucket({ capacity: 5, leakPerSecond: 1 }), 'level updatedAt'],
    [leakyBucket({ capacity: 5, leakPerSecond: 1, mode: 'shape' }), 'queuedMs at'],
    [gcra({ permitsPerSecond: 1, burst: 5 }), 'aheadMs at'],
    [smoothBursty({ permitsPerSecond: 1 }), 'storedPermits aheadMs at'],
    [smoothWarmingUp({ permitsPerSecond: 1, warmupMs: 5_000 }), 'storedPermits aheadMs at'],
  ];
  for (const [rule, fields] of rules) {
    it(`${rule.kind}${rule.name === 'lbs' ? ' (shape)' : ''}: reply, stored value and PTTL, on Redis TIME`, async () => {
      const p = prefix();
      const key = stateKey(p, 'k', stateName(rule));
      const requests = packRequests([{ group: 1, now: Number.NaN, permits: 2, maxWaitMs: 0, peek: false }]).requests;
      const reply = await runScript(
        redis,
        decideScript(),
        [key],
        [...ruleArgsOf(rule), packGroups([[1, 0]]), requests],
      );
      const [{ decision, decidedAtMs }] = unpackReplies(bufferReply(reply, 'decide'), 1, [rule], () => ({
        permits: 2,
        peek: false,
      })) as [WireDecision];
      expect(decision).toMatchObject({
        allowed: true,
        limit: rule.limit,
        remaining: rule.kind.startsWith('smooth') ? expect.any(Number) : 3,
      });
      const serverNow = Number((await redis.time())[0]) * 1000;
      expect(Math.abs(decidedAtMs - serverNow)).toBeLessThan(2_000); // decided on Redis TIME
      // Every state is its fields, packed, at the one key the client named (a window algorithm's too).
      const stored = key;
      expect(((await redis.getBuffer(stored)) as Buffer).length).toBe(8 * fields.split(' ').length);
      // The key lives a second past the time its state stops mattering (here at most 20 s): never without expiry.
      const pttl = await redis.pttl(stored);
      expect(pttl).toBeGreaterThan(1000);
      expect(pttl).toBeLessThanOrEqual(20_000 + 1000 + 100);
    });
  }

  it('refuses an unknown algorithm with a clear error', async () => {
    const requests = packRequests([{ group: 1, now: 0, permits: 1, maxWaitMs: 0, peek: false }]).requests;
    await expect(
      runScript(redis, decideScript(), ['x'], ['1\nnope\n0\n0', packGroups([[1, 0]]), requests]),
    ).rejects.toThrow(/unknown algorithm nope/);
  });

  it('refuses a rule text cut short or holding more rules than it counts, naming the ARGV', async () => {
    const requests = packRequests([{ group: 1, now: 0, permits: 1, maxWaitMs: 0, peek: false }]).requests;
    const [text] = ruleArgsOf(fixedWindow({ limit: 5, windowMs: 1000 }));
    const decide = (rules: string) => runScript(redis, decideScript(), ['x'], [rules, packGroups([[1, 0]]), requests]);
    await expect(decide(text.split('\n').slice(0, -1).join('\n'))).rejects.toThrow(/rule 1 at ARGV 1 is cut short/);
    await expect(decide(`${text}\nfixedWindow`)).rejects.toThrow(/more than 1 rules at ARGV 1/);
    await expect(decide('')).rejects.toThrow(/no rule count at ARGV 1/);
    // Nothing was written for any of them.
    expect(await redis.exists('x')).toBe(0);
  });
});

/** The rule part of ARGV, exactly as the store encodes it. */
const ruleArgsOf = (rule: Algorithm) => ruleArgs([rule]);

describe('redisStore', () => {
  it('a lone request leaves at once, alone (decide_one.lua); those asked while a call is in flight leave together', async () => {
    // A client of its own: its connection has loaded no library yet, so its first calls run by EVAL. No
    // fleet presence (failMode 'local' only), whose heartbeat would be a script call counted below.
    const client = new Redis(server.url);
    const store = redisStore({ redis: client, denyCache: false, failMode: 'closed' });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 100, windowMs: 60_000 }),
      store,
      prefix: prefix(),
    });
    await redis.script('FLUSH');
    await redis.call('FUNCTION', 'FLUSH');
    expect((await limiter.tryAcquire('a')).remaining).toBe(99);
    // The lone call ran only the lean script, by its source (EVAL, never an EVALSHA the server does not know,
    // whose NOSCRIPT retry would run after calls asked behind it), and loaded it as a function library.
    const [one, batch] = (await redis.script(
      'EXISTS',
      decideOneScript('fixedWindow').sha1,
      decideScript(['fixedWindow']).sha1,
    )) as number[];
    expect([one, batch]).toEqual([1, 0]);
    expect(await libraries()).toContain(decideOneScript('fixedWindow').functionName);
    expect(await libraries()).not.toContain(decideScript(['fixedWindow']).functionName);
    // A batch loads the batch script's library the same way.
    await Promise.all(Array.from({ length: 3 }, () => limiter.tryAcquire('w')));
    expect(await libraries()).toContain(decideScript(['fixedWindow']).functionName);
    const calls = scriptCalls;
    let before = await calls();
    const fcalls = await commandCalls('fcall');
    const first = limiter.tryAcquire('a');
    const rest = Array.from({ length: 50 }, () => limiter.tryAcquire('a'));
    const decisions = await Promise.all([first, ...rest]);
    // One call for the first, one for the 50 asked while it was in flight: both FCALLs now.
    expect((await calls()) - before).toBe(2);
    expect((await commandCalls('fcall')) - fcalls).toBe(2);
    expect(decisions.map((d) => d.remaining)).toEqual(Array.from({ length: 51 }, (_, i) => 98 - i));
    before = await calls();
    for (let i = 0; i < 20; i++) await limiter.tryAcquire(`k${i}`);
    expect((await calls()) - before).toBe(20);
    await store.close();
    client.disconnect();
  });

  const flushes: Array<[string, () => Promise<unknown>]> = [
    ['a SCRIPT FLUSH', () => redis.script('FLUSH')],
    ['a FUNCTION FLUSH (the next call reloads the library)', () => redis.call('FUNCTION', 'FLUSH')],
    ['both', async () => Promise.all([redis.script('FLUSH'), redis.call('FUNCTION', 'FLUSH')])],
  ];
  for (const [name, flush] of flushes) {
    it(`${name} in the middle of traffic costs no failed decision`, async () => {
      const store = redisStore({ redis, failMode: 'closed', timeoutMs: 2_000 });
      const errors: Error[] = [];
      store.on('store-error', (e) => errors.push(e));
      const limiter = createLimiter({
        rules: tokenBucket({ capacity: 1_000_000, refillPerSecond: 1 }),
        store,
        prefix: prefix(),
      });
      let granted = 0;
      for (let round = 0; round < 20; round++) {
        await flush();
        const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => limiter.tryAcquire(`k${i % 7}`)));
        granted += decisions.filter((d) => d.allowed).length;
        // And a lone request (decide_one.lua), whose script and library the flush took too.
        granted += (await limiter.tryAcquire('lone')).allowed ? 1 : 0;
      }
      expect(granted).toBe(2_020);
      expect(errors).toEqual([]);
      expect(store.healthy).toBe(true);
      await store.close();
    });
  }

  it('every script loads as a function library and answers as its EVAL does', async () => {
    const kinds: AlgorithmKind[] = ALGORITHM_KINDS;
    const scripts = [
      decideScript(),
      adjustScript(kinds),
      blockScript(),
      semaphoreScript(),
      ...kinds.map((kind) => decideOneScript(kind)),
      ...kinds.map((kind) => leaseScript(kind)),
      membershipScript(),
    ];
    for (const script of scripts) {
      expect(await redis.call('FUNCTION', 'LOAD', 'REPLACE', script.library), script.name).toBe(script.functionName);
    }
    // The same call both ways: a client-clock decision of each algorithm, alone, on fresh keys.
    for (const algorithm of everyAlgorithm(3, 1_000, 1)) {
      const script = decideOneScript(algorithm.kind);
      const args = [...ruleArgsOf(algorithm), '1000', '2', '0', '0'];
      const keys = () => {
        const p = prefix();
        return [stateKey(p, 'k', stateName(algorithm)), banKey(p, 'k'), banMarkerKey(p, undefined)];
      };
      const viaEval = await redis.callBuffer('EVAL', script.source, 3, ...keys(), ...args);
      const viaFunction = await redis.callBuffer('FCALL', script.functionName, 3, ...keys(), ...args);
      expect(viaFunction, algorithm.kind).toEqual(viaEval);
    }
  });

  // A window's state lives until its window ends (fixedWindow) or until its count slid out of the next window
  // (slidingWindowCounter): with 60 s windows, 60 s and 120 s from the window's start, plus a second.
  for (const [rule, life] of [
    [fixedWindow({ limit: 100, windowMs: 60_000 }), 60_000],
    [slidingWindowCounter({ limit: 100, windowMs: 60_000 }), 120_000],
  ] as const) {
    it(`${rule.kind}: a write in the window the key was written in keeps its TTL; one in a new window sets it`, async () => {
      const clock = new ManualClock(0);
      const store = redisStore({ redis, clock, denyCache: false });
      const p = prefix();
      const limiter = createLimiter({ rules: rule, store, prefix: p });
      const ttls = async () =>
        Promise.all(['lone', 'a', 'b'].map((key) => redis.pttl(stateKey(p, key, stateName(rule)))));
      // Lone requests (decide_one.lua) on one key, a batch (decide.lua) on two others.
      const decide = async () => {
        await limiter.tryAcquire('lone');
        await Promise.all([limiter.tryAcquire('lone'), limiter.tryAcquire('a'), limiter.tryAcquire('b')]);
      };
      await decide();
      for (const ttl of await ttls()) expect(ttl).toBeGreaterThan(life);
      // The same window, 30 s later on the decision clock (Redis's own clock has barely moved): the expiry set
      // then still covers the state, so it is kept (PX would have set 30 s less).
      clock.advance(30_000);
      await decide();
      for (const ttl of await ttls()) expect(ttl).toBeGreaterThan(life - 5_000);
      // A new window [60 s, 120 s) at 70 s: its state lives 10 s less than a state written at its start.
      clock.advance(40_000);
      await decide();
      for (const ttl of await ttls()) expect(ttl).toBeGreaterThan(life - 15_000);
      for (const ttl of await ttls()) expect(ttl).toBeLessThanOrEqual(life - 10_000 + 1_000);
      expect((await limiter.peek('a')).allowed).toBe(true);
      await store.close();
    });
  }

  it("rules parsed once per server stay each limiter's own, past the cache's 1,000 rule sets", async () => {
    // A generous deadline: 1,100 limiters' start-up checks leave at once. failMode 'closed' keeps the fleet
    // presence away (failMode 'local' only): its periodic heartbeat is an FCALL too, and one that fell inside
    // the rounds on a slow machine counted 2,201 calls for 2,200 decisions.
    // A client ManualClock: the two rounds take seconds on a loaded machine, and on Redis TIME a minute
    // boundary between them opened a new window (limiter 913's second decision counted as its first).
    const clock = new ManualClock(30_000);
    const store = redisStore({ redis, denyCache: false, timeoutMs: 10_000, failMode: 'closed', clock });
    const p = prefix();
    const limiters = Array.from({ length: 1_100 }, (_, i) =>
      createLimiter({ rules: fixedWindow({ limit: i + 2, windowMs: 60_000 }), store, prefix: `${p}-${i}` }),
    );
    // The lean script's library is loaded before the rounds, so every decision below is an FCALL.
    await createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), store, prefix: p }).peek('k');
    for (let i = 0; i < 100 && !(await libraries()).includes(decideOneScript('fixedWindow').functionName); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const fcalls = await commandCalls('fcall');
    for (const round of [1, 2]) {
      for (const [i, limiter] of limiters.entries()) {
        expect((await limiter.tryAcquire('k')).remaining, `limiter ${i}, round ${round}`).toBe(i + 2 - round);
      }
    }
    expect((await commandCalls('fcall')) - fcalls).toBe(2 * limiters.length);
    expect(store.healthy).toBe(true);
    await store.close();
  });

  it('reads ban keys only while a ban can be in force: none for a limiter that bans nothing, at once after a block', async () => {
    const p = prefix();
    const store = redisStore({ redis, denyCache: false, failMode: 'closed' });
    const limiter = createLimiter({ rules: fixedWindow({ limit: 100, windowMs: 60_000 }), store, prefix: p });
    await limiter.tryAcquire('warm');
    // Every command Redis runs, those inside scripts too (MONITOR shows them).
    const monitor = await redis.monitor();
    const commands: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => commands.push(args.join(' ')));
    const decide = async () => {
      await limiter.tryAcquire('k'); // alone: decide_one.lua
      await Promise.all(['k', 'a', 'b'].map((key) => limiter.tryAcquire(key))); // a batch: decide.lua
    };
    // A command a script ran on a ban key (the calls themselves name it among their KEYS).
    const banTouched = () =>
      commands.some((c) => !/^(fcall|evalsha|eval|function)\b/i.test(c) && / \S*~b( |$)/.test(c));
    await decide();
    expect(commands.some((c) => c.includes('~B'))).toBe(true); // the marker is read
    expect(banTouched()).toBe(false);
    // A block, and the next decisions (on any node) read the bans of their slot, and obey.
    await limiter.block('k', 60_000);
    commands.length = 0;
    expect((await limiter.tryAcquire('k')).blocked).toBe(true);
    const batch = await Promise.all(['k', 'a', 'b'].map((key) => limiter.tryAcquire(key)));
    expect(batch.map((d) => d.blocked ?? false)).toEqual([true, false, false]);
    expect(banTouched()).toBe(true);
    monitor.disconnect();
    await store.close();
  });

  it('every key it writes has an expiry', async () => {
    const p = prefix();
    const store = redisStore({ redis, denyCache: false });
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 3, windowMs: 60_000 }),
        tokenBucket({ capacity: 2, refillPerSecond: 1, initialPermits: 0 }),
        slidingWindowLog({ limit: 5, windowMs: 1000 }),
      ],
      store,
      prefix: p,
    });
    // One rule with a ban: a lone request's states and bans are written by decide_one.lua.
    const banning = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 60_000, blockMs: 30_000 }),
      store,
      prefix: `${p}:one`,
    });
    for (let i = 0; i < 50; i++) await limiter.tryAcquire(`user${i % 10}`);
    for (let i = 0; i < 12; i++) await banning.tryAcquire(`user${i % 4}`);
    expect(await redis.keys(`${p}:one{*}~b`)).not.toEqual([]);
    const keys = await redis.keys(`${p}*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(0);
    await store.close();
  });

  it('a hot denied key is answered locally: no Redis command until it can change', async () => {
    const clock = new ManualClock(1_000_000);
    const store = redisStore({ redis, clock });
    const limiter = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }), store, prefix: prefix() });
    for (let i = 0; i < 10; i++) expect((await limiter.tryAcquire('hot')).allowed).toBe(true);
    expect((await limiter.tryAcquire('hot')).allowed).toBe(false);
    const before = await scriptCalls();
    for (let i = 0; i < 10_000; i++) {
      const d = await limiter.tryAcquire('hot');
      if (d.allowed) throw new Error('a full window allowed a request');
    }
    expect(await scriptCalls()).toBe(before);
    clock.advance(60_000);
    expect((await limiter.tryAcquire('hot')).allowed).toBe(true);
    await store.close();
  });

  it('shadow mode on Redis: the same decisions and states as enforcement, every denial let through marked shadowed', async () => {
    const clock = new ManualClock(1_000_000);
    const rules = () => [
      fixedWindow({ limit: 3, windowMs: 1_000, name: 'w' }),
      tokenBucket({ capacity: 2, refillPerSecond: 4, name: 'b' }),
    ];
    const stores = [redisStore({ redis, clock }), redisStore({ redis, clock })] as const;
    const enforcing = createLimiter({ rules: rules(), store: stores[0], prefix: prefix() });
    const shadow = createLimiter({ rules: rules(), store: stores[1], prefix: prefix(), shadow: true });
    let shadowed = 0;
    for (let i = 0; i < 40; i++) {
      clock.advance((i * 37) % 300);
      const key = i % 3 === 0 ? 'b' : 'a';
      const enforced = await enforcing.tryAcquire(key);
      const dry = await shadow.tryAcquire(key);
      expect(dry.allowed).toBe(true);
      expect(dry.shadowed === true).toBe(!enforced.allowed);
      expect({ ...dry, allowed: enforced.allowed, shadowed: undefined }).toEqual({ ...enforced, shadowed: undefined });
      if (dry.shadowed) shadowed++;
    }
    expect(shadowed).toBeGreaterThan(5);
    expect(await shadow.peek('a')).toEqual(await enforcing.peek('a'));
    await Promise.all([enforcing.close(), shadow.close()]);
    await Promise.all(stores.map((store) => store.close()));
  });

  it('reset(key) clears the key on every node, deny caches included (pub/sub)', async () => {
    const p = prefix();
    const clock = new ManualClock(0);
    const other = new Redis(server.url);
    const storeA = redisStore({ redis, clock });
    const storeB = redisStore({ redis: other, clock });
    const a = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store: storeA, prefix: p });
    const b = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store: storeB, prefix: p });
    await Promise.all([a.ready(), b.ready()]); // both subscribed
    expect((await a.tryAcquire('k')).allowed).toBe(true);
    expect((await b.tryAcquire('k')).allowed).toBe(false); // now cached as denied on B
    const heard = nextEvent(storeB, 'reset-heard');
    await a.reset('k');
    expect((await heard)[0]).toEqual({ prefix: p, key: 'k' }); // the reset message reached B
    expect((await b.tryAcquire('k')).allowed).toBe(true);
    await storeA.close();
    await storeB.close();
    other.disconnect();
  });

  it('validates its options', () => {
    expect(() => redisStore({ redis: {} as never })).toThrow(
      /redis must be an ioredis Redis or Cluster, an iovalkey client, a node-redis client or cluster .*; got an object without the methods of any of them/,
    );
    expect(() => redisStore({ redis, denyCache: 'yes' as never })).toThrow(/denyCache must be a boolean, got "yes"/);
    expect(() => redisStore({ redis, timeoutMs: 0 })).toThrow(/timeoutMs must be a finite number > 0, got 0/);
    expect(() => redisStore({ redis, failMode: 'maybe' as never })).toThrow(/failMode must be/);
    expect(() => redisStore({ redis, clock: 'local' as never })).toThrow(/clock must be/);
    expect(() => redisStore({ redis, maxBatch: 0 })).toThrow(/maxBatch must be an integer >= 1, got 0/);
  });
});

describe('fail modes (a server that stops answering, then comes back)', () => {
  async function withDownRedis(
    failMode: 'local' | 'open' | 'closed',
    check: (store: RedisStore, down: TestRedis) => Promise<void>,
  ): Promise<void> {
    const down = await startTestRedis();
    const client = new Redis(down.url, { maxRetriesPerRequest: 1, enableOfflineQueue: true });
    client.on('error', () => {});
    const store = redisStore({ redis: client, failMode, timeoutMs: 50 });
    try {
      await check(store, down);
    } finally {
      await store.close();
      client.disconnect();
      await down.stop();
    }
  }

  for (const failMode of ['local', 'open', 'closed'] as const) {
    it(`'${failMode}': decisions keep coming within the deadline, events on failure and recovery`, async () => {
      await withDownRedis(failMode, async (store, down) => {
        const events: string[] = [];
        store.on('store-error', () => events.push('error'));
        store.on('store-recovered', () => events.push('recovered'));
        // 'local' holds this node's share of the limit: here, of a fleet of one, once Redis has counted it.
        const counted = failMode === 'local' ? nextEvent<[FleetEvent]>(store, 'fleet') : undefined;
        const limiter = createLimiter({
          rules: fixedWindow({ limit: 2, windowMs: 60_000 }),
          store,
          prefix: prefix(),
        });
        expect((await limiter.tryAcquire('k')).allowed).toBe(true);
        expect((await counted)?.[0].nodes).toBe(failMode === 'local' ? 1 : undefined);
        down.process?.kill('SIGSTOP');
        const started = performance.now();
        const during = [];
        for (let i = 0; i < 4; i++) during.push((await limiter.tryAcquire('k')).allowed);
        const worst = (performance.now() - started) / 4;
        down.process?.kill('SIGCONT');
        // Generous bound: only a hang breaks it (the deadline is 50 ms).
        expect(worst).toBeLessThan(500);
        if (failMode === 'open') expect(during).toEqual([true, true, true, true]);
        if (failMode === 'closed') expect(during).toEqual([false, false, false, false]);
        // The whole limit of 2 (one node), started from what Redis last said: 1 used, 1 left.
        if (failMode === 'local') expect(during).toEqual([true, false, false, false]);
        await new Promise((r) => setTimeout(r, 200));
        await limiter.tryAcquire('k2');
        expect(events).toEqual(['error', 'recovered']);
      });
    });
  }
});

describe('the refund script', () => {
  // Guava's prepay (smoothBursty, smoothWarmingUp) cannot give a grant back.
  const refundable = everyAlgorithm(5, 60_000, 0.001).filter((rule) => rule.refundable);
  for (const rule of refundable) {
    it(`${rule.kind}: a refund gives back exactly what a grant took`, async () => {
      const clock = new ManualClock(5_000_000);
      const p = prefix();
      const store = redisStore({ redis, clock, denyCache: false });
      const limiter = createLimiter({ rules: rule, store, prefix: p });
      await limiter.tryAcquire('k', { permits: 2 });
      const before = await limiter.peek('k');
      clock.advance(10);
      const granted = await limiter.tryAcquire('k', { permits: 2 });
      expect(granted.allowed).toBe(true);
      const key = stateKey(p, 'k', stateName(rule));
      const args = adjustArgs(ruleArgsOf(rule), 'refund', 2, { atMs: clock.now() }, clock.now());
      await runScript(redis, adjustScript([rule.kind]), [key], args);
      expect((await limiter.peek('k')).remaining).toBe(before.remaining);
      const pttl = await redis.pttl(key);
      expect(pttl).toBeGreaterThan(0); // KEEPTTL: the key still expires
      await store.close();
    });
  }
});

describe('refunds never give back what a newer window did not take', () => {
  it('fixedWindow: a refund that arrives after the window rolled over changes nothing', async () => {
    const clock = new ManualClock(60_000 - 10);
    const p = prefix();
    const rule = fixedWindow({ limit: 3, windowMs: 60_000 });
    const store = redisStore({ redis, clock, denyCache: false });
    const limiter = createLimiter({ rules: rule, store, prefix: p });
    const grantedAt = clock.now();
    await limiter.tryAcquire('k'); // counted in window 0
    clock.advance(20); // window 1 opens
    for (let i = 0; i < 3; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    await runScript(
      redis,
      adjustScript(['fixedWindow']),
      [stateKey(p, 'k', stateName(rule))],
      adjustArgs(ruleArgsOf(rule), 'refund', 1, { atMs: grantedAt }, clock.now()),
    );
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    await store.close();
  });
});
