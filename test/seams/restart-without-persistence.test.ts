/**
 * Live limits x a Redis that loses its data (a restart without persistence; a FLUSHALL is the same): nodes that
 * knew a changed configuration keep running beside nodes started since, on one Redis, in every mode. A version
 * never names two configurations (a version is Redis's time of the change, or one more than the last), and a
 * record found gone, or behind a version a node knows or a slot holds, is stored again under a version above
 * every one seen (what the node that found it knows: an old node its configuration, a new one its code's
 * rules), told to every slot, and said once on 'store-error'. So: no split brain (every node converges on one
 * configuration), no lockout (reconfigure works again on old and new nodes; a new node decides on Redis, not
 * by its fail mode), no over-admission (a fresh key's count over the three nodes is the converged limit's).
 *
 * Before (c132e5b): the new node's decisions went to the fail mode for ever (a slot raised to 2 by the old
 * node, no record at 2), the old node's reconfigure failed CONFLICT for ever (it changed from 2, the lost record
 * read as 1), and a new node's "version 2" was ignored by the old nodes (the same number), which kept 5.
 */
import { type Algorithm, type Limiter, type Store, createLimiter, fixedWindow } from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { versionKey } from '../../packages/redis/src/key-layout.js';
import { nextEvent, untilAsync } from '../harness/events.js';
import { liveBucket, livePrefix } from '../harness/live-nodes.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';

/** A day's window: counts stay whole for the length of a test. */
const daily = (limit: number): Algorithm => fixedWindow({ name: 'api', limit, windowMs: 86_400_000 });

type EventStore = Store & { on(event: string, listener: (...args: never[]) => void): unknown; off: unknown };

const MODES: ReadonlyArray<{
  readonly mode: string;
  readonly rule: (limit: number) => Algorithm;
  readonly store: (redis: Redis) => EventStore;
}> = [
  { mode: 'exact', rule: liveBucket, store: (redis) => redisStore({ redis, timeoutMs: 1_000, denyCache: false }) },
  { mode: 'leased', rule: liveBucket, store: (redis) => leasedStore({ redis, timeoutMs: 1_000 }) },
  {
    mode: 'divided',
    rule: daily,
    store: (redis) => dividedStore({ redis, timeoutMs: 1_000, heartbeatMs: 100, reserve: 0 }),
  },
];

interface Node {
  readonly limiter: Limiter;
  readonly store: EventStore;
  readonly errors: Error[];
}

let server: TestRedis | undefined;
const opened: Array<{ limiter: Limiter; store: Store; client: Redis }> = [];
afterEach(async () => {
  for (const { limiter, store, client } of opened.splice(0)) {
    await limiter.close();
    await store.close?.();
    client.disconnect();
  }
  await server?.stop();
  server = undefined;
});

/** A node of the limiter on `prefix` with `rules` in its code: a process of its own (client, store, limiter). */
async function node(prefix: string, rules: Algorithm, makeStore: (redis: Redis) => EventStore): Promise<Node> {
  const client = new Redis((server as TestRedis).url);
  const store = makeStore(client);
  const errors: Error[] = [];
  store.on('store-error', (error: Error) => void errors.push(error));
  const limiter = createLimiter({ rules, store, prefix });
  opened.push({ limiter, store, client });
  await limiter.ready();
  return { limiter, store, errors };
}

/**
 * Once `n` decides under configuration `version` or later: an exact or leased node learns it at its next call
 * to Redis (a slot's stale answer), a divided node at its next heartbeat ('reconfigured').
 */
async function learns(n: Node, version: number): Promise<void> {
  if (n.limiter.configVersion >= version) return;
  const heard = nextEvent<[{ version: number }]>(n.store, 'reconfigured', (e) => e.version >= version);
  await n.limiter.tryAcquire('probe');
  if (n.limiter.configVersion < version) await heard;
}

async function grants(limiter: Limiter, key: string, count: number): Promise<number> {
  let granted = 0;
  for (let i = 0; i < count; i++) if ((await limiter.tryAcquire(key)).allowed) granted++;
  return granted;
}

/** Redis restarts on its port with nothing kept; the nodes' clients reconnect by themselves. */
async function restartEmpty(): Promise<void> {
  const { port } = server as TestRedis;
  await (server as TestRedis).stop();
  server = await spawnRedisServer([], { port });
}

describe.each(MODES)('$mode mode: Redis restarted without persistence', ({ mode, rule, store }) => {
  it('a node started after the loss and the old nodes converge on one configuration; reconfigure works again on both; no over-admission', async () => {
    server = await spawnRedisServer();
    const prefix = livePrefix();
    const a = await node(prefix, rule(20), store);
    const b = await node(prefix, rule(20), store);
    const five = await a.limiter.reconfigure(rule(5));
    await learns(b, five.version);
    expect(b.limiter.rules[0]?.limit).toBe(5);

    await restartEmpty();
    // The old node decides again: its version (raised in its slot by the decision, the lease or the heartbeat).
    await a.limiter.tryAcquire('k');
    const slot = new Redis(server?.url as string);
    try {
      await untilAsync(async () => (await slot.get(versionKey(prefix, undefined))) !== null, 'the slot raised');
    } finally {
      slot.disconnect();
    }

    // A node started since knows only its code's rules (20): it decides on Redis, never by its fail mode.
    const c = await node(prefix, rule(20), store);
    const first = await c.limiter.tryAcquire('c-first');
    expect(first.source).toBeUndefined();
    // (A divided node new to a fleet holds a key it meets as spent: someone else may have spent it.)
    if (mode !== 'divided') expect(first.allowed).toBe(true);

    // The old node's change goes through (it was refused CONFLICT for ever) ...
    const eight = await a.limiter.reconfigure(rule(8));
    expect(eight.version).toBeGreaterThan(five.version);
    // ... and so does the new node's, which every node obeys (none keeps a same-numbered other configuration).
    const twelve = await c.limiter.reconfigure(rule(12));
    expect(twelve.version).toBeGreaterThan(eight.version);
    for (const n of [a, b, c]) await learns(n, twelve.version);
    expect([a, b, c].map((n) => [n.limiter.configVersion, n.limiter.rules[0]?.limit])).toEqual([
      [twelve.version, 12],
      [twelve.version, 12],
      [twelve.version, 12],
    ]);

    // A fresh key over the three nodes: never more than the converged limit (exactly it where Redis decides).
    const total =
      (await grants(a.limiter, 'z', 10)) + (await grants(b.limiter, 'z', 10)) + (await grants(c.limiter, 'z', 10));
    if (mode === 'exact') expect(total).toBe(12);
    else expect(total).toBeLessThanOrEqual(12);
    expect(total).toBeGreaterThan(0);
    // The loss was said (once per node that stored the configuration again), never a decision's failure.
    const lost = [a, b, c].flatMap((n) => n.errors).filter((e) => /was lost in Redis/.test(e.message));
    expect(lost.length).toBeGreaterThanOrEqual(1);
    expect(lost.length).toBeLessThanOrEqual(3);
  });

  it("the old node that finds the loss first stores again what it knew: a node started since decides under the operator's change", async () => {
    server = await spawnRedisServer();
    const prefix = livePrefix();
    const a = await node(prefix, rule(20), store);
    const five = await a.limiter.reconfigure(rule(5));
    await restartEmpty();
    // Its next change reads the record first: gone, so it is stored again (with the rules a knew), then changed.
    const six = await a.limiter.reconfigure(rule(6));
    expect(six.version).toBeGreaterThan(five.version);
    const c = await node(prefix, rule(20), store);
    expect([c.limiter.configVersion, c.limiter.rules[0]?.limit]).toEqual([six.version, 6]);
    expect(await grants(c.limiter, 'fresh', 10)).toBeLessThanOrEqual(6);
    expect(a.errors.some((e) => /was lost in Redis/.test(e.message))).toBe(true);
  });
});
