/**
 * Exact mode, leased and divided modes on every client library sluice supports (ioredis 6 and 5, iovalkey,
 * node-redis 6 and 5, Valkey GLIDE 2), standalone and on a 3-master Cluster: the differential conformance
 * suite (a slice: the full runs are on ioredis in test/redis/conformance.test.ts), exact counts under
 * concurrency, resets heard by every node, hostile keys and cross-slot policies on a Cluster, Redis killed
 * and restarted under traffic, a throttle's queue, per-rule permits and pauses across two connections, and bad clients
 * refused at construction.
 */

/**
 * Two nodes (a store each, on clients `a` and `b`) throttle calls under one limiter of 2 requests and 100
 * tokens a minute: per-rule permits are decided as one, a call past the limit waits in the queue, a pause set
 * on one node holds the other, and close() sends the waiter away with CLOSED.
 */
async function throttleOnTwoNodes(a: Parameters<typeof redisStore>[0]['redis'], b: typeof a, p: string) {
  const rules = [
    fixedWindow({ name: 'rpm', limit: 2, windowMs: 60_000 }),
    fixedWindow({ name: 'tpm', limit: 100, windowMs: 60_000 }),
  ];
  // Redis decides every call here: a fresh Cluster's first script load on a loaded machine can take longer
  // than the default 50 ms, and the fail mode's answer is not what this test is about.
  const stores = [redisStore({ redis: a, timeoutMs: 5_000 }), redisStore({ redis: b, timeoutMs: 5_000 })];
  const [onA, onB] = stores.map((store) => throttle({ limiter: createLimiter({ rules, store, prefix: p }) })) as [
    ReturnType<typeof throttle>,
    ReturnType<typeof throttle>,
  ];
  try {
    const first = await onA.run((ticket) => ticket.decision.rules?.map((r) => r.remaining), {
      permits: { rpm: 1, tpm: 60 },
    });
    expect(first).toEqual([1, 40]);
    await onB.run((ticket) => ticket.settle({ tpm: 40 }), { permits: { rpm: 1, tpm: 40 } });
    // Both requests of the minute are used: a third call waits, and leaves with CLOSED.
    const third = onB.run(() => 'never').catch((e: SluiceError) => e.code);
    await onA.pause(60_000);
    expect(await onB.pausedFor()).toBeGreaterThan(59_000);
    await onB.close();
    expect(await third).toBe('CLOSED');
  } finally {
    await Promise.all([onA.close(), onB.close()]);
    await Promise.all(stores.map((store) => store.close()));
  }
}
import {
  type Decision,
  SluiceError,
  SluiceTypeError,
  createLimiter,
  fixedWindow,
  throttle,
  tokenBucket,
} from '@sluice/core';
import { dividedStore } from '@sluice/hybrid';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { membershipKeys } from '@sluice/redis/internal';
import calculateSlot from 'cluster-key-slot';
import { type DecisionEvent, redisStore } from '@sluice/redis';
import { stateName } from '@sluice/core/internal';
import { stateKey } from '../../packages/redis/src/key-layout.js';
import { decideOneScript } from '../../packages/redis/src/scripts.js';
import fc from 'fast-check';
import { Cluster as IoredisCluster, Redis } from 'ioredis';
import { Cluster as IovalkeyCluster } from 'iovalkey';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KINDS, type OpenClient, openClient, openClusterClient } from '../harness/clients.js';
import { type TestCluster, startTestCluster } from '../harness/redis-cluster.js';
import { type TestRedis, spawnRedisServer, startTestRedis } from '../harness/redis-server.js';
import { algorithmArb, policyArb, startArb, timelineArb } from '../redis/arbitraries.js';
import { decideBoth, onRedis } from '../redis/differential.js';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

let n = 0;
const prefix = (kind: string) => `cl-${kind}-${++n}`;

/** A command's calls in an INFO commandstats reply. */
function commandCalls(info: string, command: string): number {
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

/** Waits (at most 5 s) until `check` holds. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Equal decisions, times to 1 us (the deny cache recomputes an instant from local time). */
function expectSameDecisions(redis: Decision[], memory: Decision[]): void {
  expect(redis).toHaveLength(memory.length);
  memory.forEach((m, i) => {
    const r = redis[i] as Decision;
    const { retryAfterMs, resetAfterMs, waitMs, ...rest } = m;
    expect(r, `decision ${i}`).toMatchObject(rest);
    for (const [a, b] of [
      [r.retryAfterMs, retryAfterMs],
      [r.resetAfterMs, resetAfterMs],
      [r.waitMs, waitMs],
    ] as const) {
      if (a !== b) expect(Math.abs(a - b), `decision ${i}`).toBeLessThanOrEqual(TOLERANCE_MS);
    }
  });
}

describe.each(CLIENT_KINDS)('%s, standalone', (kind) => {
  let server: TestRedis;
  const open: OpenClient[] = [];
  const client = async () => {
    const c = await openClient(kind, server);
    open.push(c);
    return c;
  };
  beforeAll(async () => {
    server = await startTestRedis();
  });
  afterAll(async () => {
    await Promise.all(open.map((c) => c.close()));
    await server?.stop();
  });

  it('decides as the memory store does (generated algorithms, policies and timelines)', async () => {
    const c = await client();
    const rulesArb = fc.oneof(
      algorithmArb().map((rule) => [rule]),
      policyArb,
    );
    await fc.assert(
      fc.asyncProperty(rulesArb, startArb, timelineArb, async (rules, start, steps) => {
        const { memory, redis } = await decideBoth(onRedis(c.client), rules, start, steps, true);
        expectSameDecisions(redis, memory);
      }),
      { numRuns: 12 },
    );
  });

  it('is exact under concurrency: 300 requests in flight on one key admit exactly the limit', async () => {
    const c = await client();
    const store = redisStore({ redis: c.client });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 50, windowMs: 60_000 }),
      store,
      prefix: prefix(kind),
    });
    const decisions = await Promise.all(Array.from({ length: 300 }, () => limiter.tryAcquire('hot')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(50);
    await limiter.close();
    await store.close();
  });

  it('an error about one key (a corrupt state) leaves the others on Redis and the store healthy; start-up passes', async () => {
    const c = await client();
    const p = prefix(kind);
    const rule = tokenBucket({ capacity: 3, refillPerSecond: 0.001 });
    const admin = new Redis(server.url);
    await admin.set(stateKey(p, 'corrupt', stateName(rule)), 'x');
    admin.disconnect();
    const sources = new Map<string, string>();
    const store = redisStore({ redis: c.client, failMode: 'closed', onDecision: (e) => sources.set(e.key, e.source) });
    const errors: Error[] = [];
    store.on('store-error', (e) => errors.push(e));
    const limiter = createLimiter({ rules: rule, store, prefix: p });
    await store.ready();
    const decisions = await Promise.all(['a', 'corrupt', 'b'].map((k) => limiter.tryAcquire(k)));
    expect(decisions.map((d) => d.allowed)).toEqual([true, false, true]);
    expect(Object.fromEntries(sources)).toEqual({ a: 'redis', corrupt: 'fallback', b: 'redis' });
    expect(errors).toEqual([]);
    expect(store.healthy).toBe(true);
    await limiter.close();
    await store.close();
  });

  it("a reset on one node clears every node's deny cache (pub/sub on the store's own connection)", async () => {
    const [a, b] = [await client(), await client()];
    const p = prefix(kind);
    const rule = fixedWindow({ limit: 1, windowMs: 60_000 });
    const storeA = redisStore({ redis: a.client });
    const storeB = redisStore({ redis: b.client });
    const onA = createLimiter({ rules: rule, store: storeA, prefix: p });
    const onB = createLimiter({ rules: rule, store: storeB, prefix: p });
    expect((await onA.tryAcquire('k')).allowed).toBe(true);
    expect((await onA.tryAcquire('k')).allowed).toBe(false); // cached on A from now on
    // Give the subscriber time to be subscribed before the reset is published.
    await new Promise((r) => setTimeout(r, 300));
    await onB.reset('k');
    let allowed = false;
    for (let i = 0; i < 50 && !allowed; i++) {
      await new Promise((r) => setTimeout(r, 20));
      allowed = (await onA.peek('k')).allowed && (await onA.tryAcquire('k')).allowed;
    }
    expect(allowed).toBe(true);
    await Promise.all([onA.close(), onB.close(), storeA.close(), storeB.close()]);
  });

  it("a throttle's per-rule permits, queue and pauses across two connections", async () => {
    await throttleOnTwoNodes((await client()).client, (await client()).client, prefix(kind));
  });

  it('leased and divided modes run on it', async () => {
    const c = await client();
    const leased = leasedLimiterOn({
      rules: tokenBucket({ capacity: 40, refillPerSecond: 0.001 }),
      redis: c.client,
      prefix: prefix(kind),
    });
    let granted = 0;
    for (let i = 0; i < 60; i++) if ((await leased.tryAcquire('k')).allowed) granted++;
    expect(granted).toBe(40);
    await leased.close();
    const divided = dividedLimiterOn({
      rules: fixedWindow({ limit: 100, windowMs: 1_000 }),
      redis: c.client,
      prefix: prefix(kind),
      heartbeatMs: 50,
    });
    const membership = await new Promise<{ nodes: number }>((resolve) => divided.store.once('membership', resolve));
    expect(membership.nodes).toBe(1);
    await divided.close();
  });

  it('Redis killed and restarted under traffic: nothing thrown, the fail mode answers, back on Redis after', async () => {
    const own = await spawnRedisServer();
    const c = await openClient(kind, own);
    const sources: DecisionEvent['source'][] = [];
    const store = redisStore({ redis: c.client, timeoutMs: 50, onDecision: (e) => sources.push(e.source) });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1_000_000, windowMs: 60_000 }),
      store,
      prefix: prefix(kind),
    });
    let threw = 0;
    let worst = 0;
    const drive = async (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end) {
        const started = performance.now();
        await limiter.tryAcquire('k').catch(() => threw++);
        worst = Math.max(worst, performance.now() - started);
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    await drive(300);
    own.process?.kill('SIGKILL');
    await drive(1_500);
    const restarted = await spawnRedisServer([], { port: own.port });
    const before = sources.length;
    await drive(3_000);
    console.log(`${kind}: worst decision ${worst.toFixed(1)} ms while Redis was killed and restarted`);
    expect(threw).toBe(0);
    expect(worst).toBeLessThan(2_000); // only a hang breaks this; the figure is printed
    expect(sources).toContain('fallback');
    expect(sources.slice(before)).toContain('redis');
    expect(sources.at(-1)).toBe('redis');
    await limiter.close();
    await store.close();
    await c.close();
    await restarted.stop();
    await own.stop();
  });
});

describe.each(CLIENT_KINDS)('%s, 3-master Cluster', (kind) => {
  let cluster: TestCluster;
  let c: OpenClient;
  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 0 });
    c = await openClusterClient(kind, cluster.startupNodes);
  });
  afterAll(async () => {
    await c?.close();
    await cluster?.stop();
  });

  it("a throttle's per-rule permits, queue and pauses across two stores", async () => {
    await throttleOnTwoNodes(c.client, c.client, prefix(kind));
  });

  it('hostile keys beside normal keys: exact counts, nothing by the fail mode', async () => {
    const sources: DecisionEvent['source'][] = [];
    const store = redisStore({
      redis: c.client,
      failMode: 'open',
      timeoutMs: 10_000,
      onDecision: (e) => sources.push(e.source),
    });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 3, windowMs: 600_000 }),
      store,
      prefix: prefix(kind),
    });
    const keys = ['}', '{', '{}', '}{', 'a{b}c', ...Array.from({ length: 20 }, (_, i) => `user:${i}`)];
    const decisions = await Promise.all(
      keys.flatMap((key) => Array.from({ length: 5 }, () => limiter.tryAcquire(key).then((d) => [key, d] as const))),
    );
    for (const key of keys)
      expect(
        decisions.filter(([k, d]) => k === key && d.allowed),
        key,
      ).toHaveLength(3);
    expect(sources.filter((s) => s !== 'redis')).toEqual([]);
    await limiter.close();
    await store.close();
  });

  it("a divided store's limiters each heartbeat their own fleet in a slot of its own, spread over the primaries", async () => {
    // Keys live 2 x 3 heartbeats: long enough to be counted on a loaded machine.
    const store = dividedStore({ redis: c.client, heartbeatMs: 2_000 });
    const prefixes = Array.from({ length: 12 }, () => prefix(kind));
    const heard = new Set<string>();
    const everyFleetHeard = new Promise<void>((resolve) =>
      store.on('membership', (e) => {
        if (e.nodes === 1 && e.share === 0.7) heard.add(e.prefix);
        if (heard.size === prefixes.length) resolve();
      }),
    );
    const limiters = prefixes.map((p) =>
      createLimiter({ rules: fixedWindow({ limit: 100, windowMs: 1_000 }), store, prefix: p }),
    );
    await everyFleetHeard;
    const admins = cluster.nodes.map((node) => new Redis(node.url));
    const owners = new Set<number>();
    for (const p of prefixes) {
      const slot = calculateSlot(membershipKeys(p, 'fw-100-per-1s')[0]);
      const counts = await Promise.all(admins.map((a) => a.cluster('COUNTKEYSINSLOT', slot)));
      owners.add(counts.findIndex((count) => Number(count) > 0));
    }
    expect(owners.has(-1)).toBe(false);
    expect(owners.size).toBeGreaterThan(1);
    await Promise.all(limiters.map((l) => l.close()));
    await store.close();
    for (const admin of admins) admin.disconnect();
  });

  it('a policy with a global rule in another slot: never over either limit', async () => {
    const store = redisStore({ redis: c.client, timeoutMs: 10_000, denyCache: false });
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 4, windowMs: 600_000, name: 'user' }),
        fixedWindow({ limit: 10, windowMs: 600_000, name: 'global', scope: 'all' }),
      ],
      store,
      prefix: prefix(kind),
    });
    const decisions = await Promise.all(
      Array.from({ length: 8 }, (_, u) => Array.from({ length: 6 }, () => limiter.tryAcquire(`u${u}`))).flat(),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    await limiter.close();
    await store.close();
  });

  it('runs its scripts as functions, loaded on every primary; a primary that lost them costs no failed decision', async () => {
    const admins = cluster.nodes.map((node) => new Redis(node.url));
    const calls = async (command: string) => {
      let total = 0;
      for (const admin of admins) total += commandCalls(await admin.info('commandstats'), command);
      return total;
    };
    const everyPrimaryHasIt = async (functionName: string) =>
      (await Promise.all(admins.map((a) => a.call('FUNCTION', 'LIST', 'LIBRARYNAME', functionName)))).every(
        (list) => (list as unknown[]).length === 1,
      );
    const errors: Error[] = [];
    const store = redisStore({ redis: c.client, failMode: 'closed', timeoutMs: 10_000, denyCache: false });
    store.on('store-error', (e) => errors.push(e));
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1_000, windowMs: 600_000 }),
      store,
      prefix: prefix(kind),
      // The calls counted are decisions: no background flush of limited keys, no list check among them.
      limitedKeys: false,
      accessList: false,
    });
    const keys = Array.from({ length: 30 }, (_, i) => `user:${i}`);
    const lone = decideOneScript('fixedWindow').functionName;
    let granted = 0;
    const decideEach = async () => {
      for (const key of keys) if ((await limiter.tryAcquire(key)).allowed) granted++;
    };
    await decideEach(); // the first call ran by EVALSHA and loaded the library
    await until(() => everyPrimaryHasIt(lone));
    const before = { fcall: await calls('fcall'), bySha: (await calls('evalsha')) + (await calls('eval')) };
    await decideEach();
    // At least one FCALL per decision and no script sent by sha1 or source: every decision ran as a function.
    // Not an exact count: commandstats counts every FCALL the servers ran, and a loaded clean-clone CI run once
    // counted one more than the decisions asked (31 for 30, cause not found). The peeks below check that each
    // decision counted once.
    expect((await calls('fcall')) - before.fcall).toBeGreaterThanOrEqual(keys.length);
    expect((await calls('evalsha')) + (await calls('eval')) - before.bySha).toBe(0);
    // One primary loses it (as after a restart without persistence): the call that meets the loss runs by
    // EVALSHA and the library is loaded again.
    await admins[1]?.call('FUNCTION', 'FLUSH');
    await decideEach();
    await until(() => everyPrimaryHasIt(lone));
    await decideEach();
    expect(granted).toBe(4 * keys.length);
    for (const key of keys) expect((await limiter.peek(key)).remaining).toBe(1_000 - 4);
    expect(errors).toEqual([]);
    await limiter.close();
    await store.close();
    for (const admin of admins) admin.disconnect();
  });

  it('a standalone client of this library on a Cluster node: start-up says to pass a Cluster client', async () => {
    expect(await misconfiguredAtStartUp(await openClient(kind, cluster.nodes[0] as TestRedis))).toMatch(
      /the client is a standalone one .*, but the server is a Redis Cluster node .*pass a Cluster client/,
    );
  });
});

/**
 * The message of the STORE_MISCONFIGURED error a store on `c` reports at start-up: ready() rejects with it,
 * and 'store-error' carried the same. Closes the store and the client.
 */
async function misconfiguredAtStartUp(c: { client: unknown; close(): Promise<void> }): Promise<string> {
  const store = redisStore({ redis: c.client as never, failMode: 'closed' });
  const errors: Error[] = [];
  store.on('store-error', (e) => errors.push(e));
  const limiter = createLimiter({
    rules: fixedWindow({ limit: 3, windowMs: 60_000 }),
    store,
    prefix: prefix('mode'),
  });
  const failure = await store.ready().then(
    () => undefined,
    (e: unknown) => e as SluiceError,
  );
  expect(failure).toBeInstanceOf(SluiceError);
  expect(failure?.code, failure?.message).toBe('STORE_MISCONFIGURED');
  expect(errors.map((e) => e.message)).toContain(failure?.message);
  await limiter.close();
  await store.close();
  await c.close();
  return failure?.message ?? '';
}

describe('clients refused at construction, with what is accepted', () => {
  let server: TestRedis;
  beforeAll(async () => {
    server = await startTestRedis();
  });
  afterAll(async () => server?.stop());

  const refused = (client: unknown, why: RegExp) => {
    let error: unknown;
    try {
      redisStore({ redis: client as never });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceTypeError);
    expect((error as Error).message).toMatch(
      /redis must be an ioredis Redis or Cluster, an iovalkey client, a node-redis client/,
    );
    expect((error as Error).message).toMatch(why);
  };

  it('an object that is no client, and values that are not objects', () => {
    refused({ get: () => 1 }, /without the methods of any of them/);
    refused('redis://127.0.0.1', /got "redis:\/\/127.0.0.1"/);
    refused(undefined, /got undefined/);
  });

  it('closed clients of every library', async () => {
    for (const kind of CLIENT_KINDS) {
      const c = await openClient(kind, server);
      await c.close();
      if (kind === 'glide' || kind.startsWith('ioredis') || kind === 'iovalkey')
        await new Promise((r) => setTimeout(r, 50));
      refused(c.client, /closed|not open/);
    }
  });

  it('clients in subscriber mode', async () => {
    for (const kind of ['ioredis', 'iovalkey', 'node-redis'] as const) {
      const c = await openClient(kind, server);
      const client = c.client as unknown as { subscribe(channel: string, listener?: () => void): Promise<unknown> };
      await client.subscribe('some-channel', () => {});
      refused(c.client, /subscriber mode/);
      await c.close();
    }
  });

  it('a Cluster client on a standalone server (ioredis and iovalkey: node-redis and GLIDE refuse it at their own connect)', async () => {
    const seeds = [{ host: server.host, port: server.port }];
    for (const client of [new IoredisCluster(seeds), new IovalkeyCluster(seeds)]) {
      client.on('error', () => {});
      expect(await misconfiguredAtStartUp({ client, close: async () => client.disconnect() })).toMatch(
        /the client is a Cluster client .*, but the server is a standalone Redis .*pass a standalone client/,
      );
    }
  });

  it('nothing is left open by a refused construction', async () => {
    const before = process.getActiveResourcesInfo().length;
    for (let i = 0; i < 20; i++) refused({}, /without the methods/);
    expect(process.getActiveResourcesInfo().length).toBeLessThanOrEqual(before);
  });
});
