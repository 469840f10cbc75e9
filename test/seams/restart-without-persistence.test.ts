/**
 * Live limits x a Redis that loses its data (a standalone server restarted without persistence; a Cluster
 * flushed): nodes that knew a changed configuration keep running beside nodes started since, on one Redis, in
 * every mode. A version
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
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { versionKey } from '../../packages/redis/src/key-layout.js';
import { nextEvent, untilAsync } from '../harness/events.js';
import { LIVE_MODES, LiveFleet, grants, learns } from '../harness/live-fleet.js';
import { type LiveClient, livePrefix } from '../harness/live-nodes.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';
import { useTestCluster } from '../harness/use-redis.js';

const testCluster = useTestCluster();
let server: TestRedis | undefined;

/** Where the fleet runs, and how Redis loses everything there. */
interface Deployment {
  readonly name: string;
  readonly start: () => Promise<void>;
  readonly open: () => LiveClient;
  /** Everything gone; the nodes' clients reconnect by themselves. */
  readonly lose: () => Promise<void>;
  /**
   * Whether everything goes at once (a restart), so a node's next call finds every key of the limiter gone;
   * a Cluster flushed primary by primary may lose a slot's version before the record, or after.
   */
  readonly atOnce: boolean;
  /** Once the old node's version is back in the limiter's slot (standalone: one key to read). */
  readonly raised: (prefix: string) => Promise<void>;
}

const DEPLOYMENTS: readonly Deployment[] = [
  {
    name: 'a standalone server restarted without persistence',
    start: async () => {
      server = await spawnRedisServer();
    },
    open: () => new Redis((server as TestRedis).url),
    lose: async () => {
      const { port } = server as TestRedis;
      await (server as TestRedis).stop();
      server = await spawnRedisServer([], { port });
    },
    atOnce: true,
    raised: async (prefix) => {
      const probe = new Redis((server as TestRedis).url);
      try {
        await untilAsync(async () => (await probe.get(versionKey(prefix, undefined))) !== null, 'the slot raised');
      } finally {
        probe.disconnect();
      }
    },
  },
  {
    name: 'a Cluster flushed (FLUSHALL on every primary)',
    start: async () => {},
    open: () => testCluster().cluster.client(),
    lose: async () => {
      for (const node of testCluster().cluster.nodes) {
        const direct = new Redis(node.url);
        await direct.flushall();
        direct.disconnect();
      }
    },
    atOnce: false,
    // On a Cluster each slot has its version: the old node's decision on 'k' raised k's (no wait needed).
    raised: async () => {},
  },
];

/** The warning a node gives when it stores a lost configuration again. */
const lostSaid = (error: Error): boolean => /was lost in Redis/.test(error.message);

const fleet = new LiveFleet(() => (current as Deployment).open());
let current: Deployment | undefined;
afterEach(async () => {
  await fleet.close();
  await server?.stop();
  server = undefined;
});

describe.each(
  DEPLOYMENTS.flatMap((deployment) => LIVE_MODES.map((mode) => ({ ...mode, deployment, where: deployment.name }))),
)('$mode mode on $where', ({ mode, rule, store, deployment }) => {
  it('a node started after the loss and the old nodes converge on one configuration; reconfigure works again on both; no over-admission', async () => {
    current = deployment;
    await deployment.start();
    const prefix = livePrefix();
    const a = await fleet.node(prefix, rule(20), store);
    const b = await fleet.node(prefix, rule(20), store);
    const five = await a.limiter.reconfigure(rule(5));
    await learns(b, five.version);
    expect(b.limiter.rules[0]?.limit).toBe(5);

    await deployment.lose();
    // The old node decides again: its version (raised in its slot by the decision, the lease or the heartbeat).
    await a.limiter.tryAcquire('k');
    await deployment.raised(prefix);

    // A divided node hears at its heartbeat that its slot lost its version: it stores again what it knew (5),
    // and says so, before a node started since could store its code's rules (a or b, whichever beats first).
    const oldWins = mode === 'divided' && deployment.atOnce;
    if (oldWins) {
      await Promise.race(
        [a, b].map((n) => (n.errors.some(lostSaid) ? undefined : nextEvent(n.store, 'store-error', lostSaid))),
      );
    }
    // A node started since knows only its code's rules (20): it decides on Redis, never by its fail mode.
    const c = await fleet.node(prefix, rule(20), store);
    if (oldWins) expect(c.limiter.rules[0]?.limit).toBe(5);
    const first = await c.limiter.tryAcquire('k');
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
    const lost = [a, b, c].flatMap((n) => n.errors).filter(lostSaid);
    expect(lost.length).toBeGreaterThanOrEqual(1);
    expect(lost.length).toBeLessThanOrEqual(3);
  });

  it("the old node that finds the loss first stores again what it knew: a node started since decides under the operator's change", async () => {
    current = deployment;
    await deployment.start();
    const prefix = livePrefix();
    const a = await fleet.node(prefix, rule(20), store);
    const five = await a.limiter.reconfigure(rule(5));
    // A key's own rules: stored again with the rest.
    const overrides = ['acme'];
    for (const key of overrides) await a.limiter.override(key, rule(2));
    await deployment.lose();
    // Its next change reads the record first: gone, so it is stored again (with the rules a knew), then changed.
    const six = await a.limiter.reconfigure(rule(6));
    expect(six.version).toBeGreaterThan(five.version);
    const c = await fleet.node(prefix, rule(20), store);
    expect([c.limiter.configVersion, c.limiter.rules[0]?.limit]).toEqual([six.version, 6]);
    expect(await grants(c.limiter, 'fresh', 10)).toBeLessThanOrEqual(6);
    expect((await c.limiter.overrides()).overrides.map((o) => [o.key, o.rules[0]?.limit])).toEqual(
      overrides.map((key) => [key, 2]),
    );
    expect(a.errors.some(lostSaid)).toBe(true);
  });
});
