/**
 * redisEngine, the engine contract on Redis, on a standalone server and a real Cluster: random timelines of
 * every algorithm of the registry and of policies (across Cluster slots too) decided with explicit times, bit
 * for bit as core's memory store decides them; adjustments; leases as leased mode's lease client takes them;
 * heartbeats; the configuration record and stale answers; pub/sub; states shared with redisStore both ways;
 * bad input refused before anything is consumed; a paused server's deadline.
 */
import {
  type Algorithm,
  type Decision,
  ManualClock,
  SluiceRangeError,
  SluiceTypeError,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import type { BoundStore } from '@sluice/core/internal';
import {
  type DecideAnswer,
  type Engine,
  type EngineAsk,
  type EngineDecision,
  type EngineRules,
  type EngineTime,
  type Heartbeat,
  checkEngine,
  isStale,
  stateName,
} from '@sluice/core/engine';

import { redisEngine, redisStore } from '@sluice/redis';
import { ALGORITHM_KINDS, algorithmArb as registryArb } from '@sluice/test-kit';
import fc from 'fast-check';
import { type Cluster, Redis } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { leaseShape } from '../../packages/hybrid/src/lease-client.js';
import { leaseByScript } from '../harness/lease-script.js';
import { toConnection } from '../../packages/redis/src/connection/connect.js';
import { lesseesName } from '../../packages/redis/src/engine/engine-fleet.js';
import { membershipKeys, stateKey } from '../../packages/redis/src/key-layout.js';
import { startTestRedis } from '../harness/redis-server.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';
import { policyArb, sharedPolicyArb, type Step, startArb, timelineArb } from './arbitraries.js';

const standalone = useTestRedis();
const cluster = useTestCluster();
/** Random timelines per property on a standalone server; a Cluster's calls cost more, so it runs fewer. */
const RUNS_STANDALONE = 6;
const targets: Array<[string, () => Redis | Cluster, number]> = [
  ['a standalone server', () => standalone().redis, RUNS_STANDALONE],
  ['a Cluster', () => cluster().client, 2],
];

let run = 0;
const nextPrefix = () => `eng${process.pid}-${++run}`;
const rulesOf = (prefix: string, rules: Algorithm[], version?: number): EngineRules =>
  version === undefined
    ? { prefix, rules, states: rules.map(stateName) }
    : { prefix, rules, states: rules.map(stateName), version };

/** The decisions of answers none of which is stale. */
function decisionsOf(answers: readonly DecideAnswer[]): readonly EngineDecision[] {
  return answers.map((answer) => {
    if (isStale(answer)) throw new Error(`stale: ${answer.stale}`);
    return answer;
  });
}

/** `asks` decided by `engine`, each asked at `at`. */
function decideAt(
  engine: Engine,
  rules: EngineRules,
  asks: ReadonlyArray<Omit<EngineAsk, 'at'>>,
  at: EngineTime,
): Promise<readonly DecideAnswer[]> {
  return engine.decide(
    rules,
    asks.map((ask) => ({ ...ask, at })),
  );
}

/**
 * One timeline decided by the engine (each step's requests as one batch, at the step's time) and by the memory
 * store (one by one, its ManualClock set to that time): both sides' decisions.
 */
async function decideBoth(
  client: Redis | Cluster,
  rules: Algorithm[],
  startMs: number,
  steps: readonly Step[],
  oneByOne: boolean,
): Promise<{ memory: Decision[]; engine: Decision[] }> {
  const prefix = nextPrefix();
  const clock = new ManualClock(startMs);
  const mem: BoundStore = memoryStore({ clock }).bind({ rules, prefix });
  const engine = redisEngine({ redis: client, timeoutMs: 5_000 });
  const engineRules = rulesOf(prefix, rules);
  const out = { memory: [] as Decision[], engine: [] as Decision[] };
  const waitOf = (maxWaitMs: number) => (rules.length > 1 ? 0 : maxWaitMs);
  let at = startMs;
  for (const step of steps) {
    at += step.dtMs;
    clock.advance(step.dtMs);
    for (const r of step.requests)
      out.memory.push(await (r.peek ? mem.peek(r.key) : mem.consume(r.key, r.permits, waitOf(r.maxWaitMs))));
    // A peek asks about one permit, as BoundStore.peek does.
    const asks = step.requests.map((r) => ({
      key: r.key,
      permits: r.peek ? 1 : r.permits,
      maxWaitMs: r.peek ? 0 : waitOf(r.maxWaitMs),
      peek: r.peek,
    }));
    if (oneByOne)
      for (const ask of asks)
        out.engine.push(...decisionsOf(await decideAt(engine, engineRules, [ask], at)).map((d) => d.decision));
    else out.engine.push(...decisionsOf(await decideAt(engine, engineRules, asks, at)).map((d) => d.decision));
  }
  return out;
}

describe.each(targets)('redisEngine on %s', (_name, client, runs) => {
  for (const kind of ALGORITHM_KINDS) {
    it(`${kind}: random timelines decide bit for bit as the memory store`, async () => {
      await fc.assert(
        fc.asyncProperty(registryArb({ kinds: [kind] }), startArb, timelineArb, async (rule, start, steps) => {
          const { memory, engine } = await decideBoth(client(), [rule], start, steps, false);
          expect(engine).toEqual(memory);
          expect(JSON.stringify(engine)).toBe(JSON.stringify(memory));
        }),
        { numRuns: runs },
      );
    });
  }

  it('policies (on a standalone server also with a rule shared across keys) decide bit for bit as the memory store', async () => {
    // On a Cluster a rule shared across keys lives in another slot: decided slot by slot, what one slot took
    // is given back when another refuses, all or nothing but not bit for bit (checkEngine's sharedIdentities).
    const arbitraries = runs === RUNS_STANDALONE ? [policyArb, sharedPolicyArb] : [policyArb];
    for (const policies of arbitraries)
      await fc.assert(
        fc.asyncProperty(policies, startArb, timelineArb, async (rules, start, steps) => {
          // One ask at a time: a policy across slots takes and gives back slot by slot (see CrossSlotPolicy).
          const { memory, engine } = await decideBoth(client(), rules, start, steps, true);
          expect(JSON.stringify(engine)).toBe(JSON.stringify(memory));
        }),
        { numRuns: runs },
      );
  });

  it('answers each rule verdict, the ban and the decision time; `at` undefined decides on Redis TIME', async () => {
    const engine = redisEngine({ redis: client() });
    const rules = rulesOf(nextPrefix(), [
      fixedWindow({ limit: 2, windowMs: 60_000, name: 'a' }),
      tokenBucket({ capacity: 5, refillPerSecond: 1, name: 'b' }),
    ]);
    const before = Date.now();
    const [first] = decisionsOf(
      await decideAt(engine, rules, [{ key: 'k', permits: 1, maxWaitMs: 0, peek: false }], undefined),
    );
    expect(first?.decidedAtMs).toBeGreaterThanOrEqual(before - 1_000);
    expect(first?.verdicts.map((v) => v.remaining)).toEqual([1, 4]);
    expect(first?.ban).toBeUndefined();
    await engine.adjust(rules, 'k', { op: 'block', ms: 60_000 }, 1_000);
    const [blocked] = decisionsOf(
      await decideAt(engine, rules, [{ key: 'k', permits: 1, maxWaitMs: 0, peek: true }], 2_000),
    );
    expect(blocked?.ban).toEqual({ rule: -1, restMs: 59_000 });
    expect(blocked?.decidedAtMs).toBe(2_000);
    expect(blocked?.decision.allowed).toBe(false);
  });

  it('adjusts as the memory store does (refund, penalize, reset, block, unblock) and says what it freed', async () => {
    const rule = fixedWindow({ limit: 3, windowMs: 10_000, name: 'fw' });
    const prefix = nextPrefix();
    const clock = new ManualClock(1_000_000);
    const mem = memoryStore({ clock }).bind({ rules: [rule], prefix });
    const engine = redisEngine({ redis: client() });
    const rules = rulesOf(prefix, [rule]);
    const peekBoth = async () => {
      const [d] = decisionsOf(
        await decideAt(engine, rules, [{ key: 'k', permits: 1, maxWaitMs: 0, peek: true }], clock.now()),
      );
      expect(d?.decision).toEqual(await mem.peek('k'));
    };
    const at = () => clock.now();
    for (let i = 0; i < 3; i++) {
      await mem.consume('k', 1, 0);
      await decideAt(engine, rules, [{ key: 'k', permits: 1, maxWaitMs: 0, peek: false }], at());
    }
    clock.advance(10);
    await peekBoth();
    await mem.refund?.('k', 1, 10);
    expect(await engine.adjust(rules, 'k', { op: 'refund', permits: 1, grantedMsAgo: 10 }, at())).toEqual({
      freed: true,
    });
    await peekBoth();
    expect(await engine.adjust(rules, 'k', { op: 'refund', permits: 1, grantedMsAgo: 10 }, at())).toEqual({
      freed: false,
    });
    await mem.refund?.('k', 1, 10);
    await mem.penalize?.('k', 4);
    expect(await engine.adjust(rules, 'k', { op: 'penalize', permits: 4 }, at())).toEqual({ freed: false });
    await peekBoth();
    await mem.block?.('k', 5_000);
    await engine.adjust(rules, 'k', { op: 'block', ms: 5_000 }, at());
    await peekBoth();
    await mem.unblock?.('k');
    expect(await engine.adjust(rules, 'k', { op: 'unblock' }, at())).toEqual({ freed: true });
    expect(await engine.adjust(rules, 'k', { op: 'unblock' }, at())).toEqual({ freed: false });
    await peekBoth();
    await mem.reset('k');
    expect(await engine.adjust(rules, 'k', { op: 'reset' }, at())).toEqual({ freed: true });
    expect(await engine.adjust(rules, 'k', { op: 'reset' }, at())).toEqual({ freed: false });
    await peekBoth();
  });

  it("passes core's conformance suite (checkEngine: every algorithm, policies, adjustments, leases, fleets, versions, records, messages)", async () => {
    // On a Cluster a policy's rules of other identities live in other slots: decided slot by slot, what one
    // slot took is given back when another refuses (all or nothing, not bit for bit: see the test above).
    const sharedIdentities = runs === RUNS_STANDALONE;
    for (const seed of [1, 2, 3]) {
      const engine = redisEngine({ redis: client(), timeoutMs: 5_000 });
      const report = await checkEngine(engine, { seed, sharedIdentities });
      expect(report.cases).toBeGreaterThan(20);
    }
  });

  it("leases as leased mode's lease client does, counting the nodes among the lessees", async () => {
    const rule = tokenBucket({ capacity: 20, refillPerSecond: 1, name: 'tb' });
    const engine = redisEngine({ redis: client() });
    const connection = toConnection(client());
    const viaEngine = rulesOf(nextPrefix(), [rule]);
    const viaClient = nextPrefix();
    const state = stateName(rule);
    const asks = [
      { node: 'n1', want: 8, hoardingDivisor: undefined, register: true, at: 1_000 },
      { node: 'n2', want: 8, hoardingDivisor: 2, register: true, at: 1_500 },
      { node: 'n1', want: 8, hoardingDivisor: undefined, register: false, at: 2_000 },
      { node: 'n3', want: 30, hoardingDivisor: undefined, register: true, at: 2_000 },
    ];
    for (const { node, want, hoardingDivisor, register, at } of asks) {
      const answer = await engine.lease(
        viaEngine,
        { key: 'k', want, node, liveMs: 3_000, hoardingDivisor, register },
        at,
      );
      const reply = await leaseByScript(connection, {
        stateKey: stateKey(viaClient, 'k', state),
        lesseesKey: stateKey(viaClient, 'k', lesseesName(state)),
        shape: leaseShape(rule),
        want,
        nodeId: node,
        liveMs: 3_000,
        nowMs: at,
        hoardingDivisor,
        register,
      });
      expect(answer).toEqual({
        granted: reply.granted,
        retryMs: reply.retryMs,
        decidedAtMs: reply.decidedAtMs,
        lessees: reply.liveNodes,
        centralRemaining: reply.centralRemaining,
        registered: reply.registered,
      });
    }
    const last = await engine.lease(
      viaEngine,
      { key: 'k', want: 1, node: 'n1', liveMs: 3_000, hoardingDivisor: undefined, register: true },
      2_000,
    );
    expect(last).toMatchObject({ granted: 0, lessees: 3 });
  });

  it('heartbeats: nodes found, the limit divided among them, a leaver forgotten, a reused id refused', async () => {
    const engine = redisEngine({ redis: client() });
    const prefix = nextPrefix();
    const beat = (node: string, at: number, lastAt: number | undefined, leaving = false) =>
      engine.heartbeat(
        {
          prefix,
          fleet: 'fw',
          node,
          leaving,
          liveMs: 3_000,
          intervalMs: 1_000,
          limit: 90,
          burst: 90,
          demand: 10,
          division: 'equal',
          divided: 1,
          windowed: false,
          minLocal: 1,
          lastAt,
          knownNodes: 0,
          assumedNodes: 1,
          version: 1,
        },
        at,
      );
    const a = await beat('a', 10_000, undefined);
    expect(a).toMatchObject({ at: 10_000, nodes: 1, founded: true, idTaken: false, version: 1 });
    await beat('b', 10_100, undefined);
    await beat('c', 10_200, undefined);
    const later = await beat('a', 11_100, a.at);
    expect(later.nodes).toBe(3);
    expect(later.current).toBeCloseTo(1 / 3, 12);
    // 'b' wrote 10_100; a second process given 'b' that last wrote earlier finds the id taken.
    const again = await beat('b', 11_200, 10_050);
    expect(again.idTaken).toBe(true);
    await beat('c', 11_300, 10_200, true);
    const afterLeave = await beat('a', 12_200, later.at);
    expect(afterLeave.nodes).toBe(2);
  });

  it('keeps the configuration record by compare-and-set; a call under an older version is answered stale', async () => {
    const engine = redisEngine({ redis: client(), timeoutMs: 5_000 });
    const prefix = nextPrefix();
    const none = await engine.readConfig(prefix);
    expect(none.record).toBeUndefined();
    expect(Math.abs(none.engineNowMs - Date.now())).toBeLessThan(5_000);
    expect(await engine.writeConfig(prefix, 1, { version: 7, text: '{"rules":[]}' })).toEqual({ written: true });
    expect(await engine.writeConfig(prefix, 1, { version: 8, text: '{}' })).toEqual({ written: false, conflict: 7 });
    expect((await engine.readConfig(prefix)).record).toEqual({ version: 7, text: '{"rules":[]}' });
    const rule = tokenBucket({ capacity: 5, refillPerSecond: 1, name: 'tb' });
    const ask = { key: 'k', permits: 1, maxWaitMs: 0, peek: false };
    expect(await decideAt(engine, rulesOf(prefix, [rule], 3), [ask], 1_000)).toEqual([{ stale: 7 }]);
    expect(await engine.adjust(rulesOf(prefix, [rule], 3), 'k', { op: 'penalize', permits: 1 }, 1_000)).toEqual({
      stale: 7,
    });
    const lease = { key: 'k', want: 1, node: 'n', liveMs: 3_000, hoardingDivisor: undefined, register: true };
    expect(await engine.lease(rulesOf(prefix, [rule], 3), lease, 1_000)).toEqual({ stale: 7 });
    // Stale calls changed nothing: the bucket is full under the version in force.
    const [d] = decisionsOf(await decideAt(engine, rulesOf(prefix, [rule], 7), [{ ...ask, peek: true }], 1_000));
    expect(d?.decision.remaining).toBe(5);
  });

  it("publishes to every subscriber of a channel, on the prefix's reset channel", async () => {
    const engine = redisEngine({ redis: client() });
    const channel = nextPrefix();
    const first: string[] = [];
    const second: string[] = [];
    const stopFirst = await engine.subscribe(channel, (m) => first.push(m));
    const stopSecond = await engine.subscribe(channel, (m) => second.push(m));
    await engine.publish(channel, 'one');
    await expect.poll(() => second).toEqual(['one']);
    expect(first).toEqual(['one']);
    await stopFirst();
    await engine.publish(channel, 'two');
    await expect.poll(() => second).toEqual(['one', 'two']);
    expect(first).toEqual(['one']);
    await stopSecond();
  });

  it('shares states with redisStore both ways (same prefix, state name and identity)', async () => {
    const rule = fixedWindow({ limit: 5, windowMs: 60_000, name: 'fw' });
    const prefix = nextPrefix();
    const clock = new ManualClock(5_000_000);
    const store = redisStore({ redis: client(), clock, timeoutMs: 5_000 });
    const bound = store.bind({ rules: [rule], prefix });
    const engine = redisEngine({ redis: client() });
    const rules = rulesOf(prefix, [rule]);
    try {
      await decideAt(engine, rules, [{ key: 'u', permits: 3, maxWaitMs: 0, peek: false }], clock.now());
      expect((await bound.peek('u')).remaining).toBe(2);
      await bound.consume('u', 2, 0);
      const [d] = decisionsOf(
        await decideAt(engine, rules, [{ key: 'u', permits: 1, maxWaitMs: 0, peek: false }], clock.now()),
      );
      expect(d?.decision.allowed).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('refuses bad input before sending anything, and never throws synchronously', async () => {
    const engine = redisEngine({ redis: client() });
    const rules = rulesOf(nextPrefix(), [fixedWindow({ limit: 5, windowMs: 60_000, name: 'fw' })]);
    const good = { key: 'k', permits: 1, maxWaitMs: 0, peek: false };
    const bad: Array<[() => Promise<unknown>, string]> = [
      [() => decideAt(engine, rules, [good, { ...good, permits: -1 }], 1_000), 'asks[1].permits'],
      [() => decideAt(engine, rules, [{ ...good, permits: { nope: 1 } }], 1_000), 'asks[0].permits.nope'],
      [() => decideAt(engine, rules, [good], Number.NaN), 'asks[0].at'],
      [() => decideAt(engine, { ...rules, states: [] }, [good], 1_000), 'rules.states'],
      [
        () => engine.adjust(rules, 'k', { op: 'refund', permits: Number.POSITIVE_INFINITY, grantedMsAgo: 0 }, 1_000),
        'adjustment.permits',
      ],
      [() => engine.adjust(rules, 'k', { op: 'explode' } as never, 1_000), 'adjustment.op'],
      [
        () =>
          engine.lease(
            rules,
            { key: 'k', want: 0, node: 'n', liveMs: 1, hoardingDivisor: undefined, register: true },
            1_000,
          ),
        'ask.want',
      ],
      [() => engine.writeConfig('p', 0, { version: 2, text: '' }), 'expected'],
      [() => engine.publish('', 'm'), 'channel'],
    ];
    for (const [call, argument] of bad) {
      let pending: Promise<unknown> | undefined;
      expect(() => {
        pending = call();
      }).not.toThrow();
      const error = await (pending as Promise<unknown>).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error instanceof SluiceRangeError || error instanceof SluiceTypeError, String(error)).toBe(true);
      expect((error as SluiceRangeError).argument).toBe(argument);
    }
    const [d] = decisionsOf(await decideAt(engine, rules, [{ ...good, peek: true }], 1_000));
    expect(d?.decision.remaining).toBe(5);
    expect(() => redisEngine({ redis: client(), timeoutMS: 5 } as never)).toThrow(/no option "timeoutMS"/);
  });
});

describe('redisEngine heartbeats of one turn', () => {
  /** Script calls each server ran (EVAL, EVALSHA, FCALL): one per membership.lua call, however it was sent. */
  async function scriptCalls(admins: readonly Redis[]): Promise<number> {
    let total = 0;
    for (const admin of admins) {
      const info = await admin.info('commandstats');
      for (const m of info.matchAll(/cmdstat_(eval|evalsha|fcall):calls=(\d+)/g)) total += Number(m[2]);
    }
    return total;
  }
  const beatOf = (prefix: string, fleet: string, node: string): Heartbeat => ({
    prefix,
    fleet,
    node,
    leaving: false,
    liveMs: 3_000,
    intervalMs: 1_000,
    limit: 100,
    burst: 100,
    demand: 10,
    division: 'equal',
    divided: 1,
    windowed: false,
    minLocal: 1,
    lastAt: undefined,
    knownNodes: 0,
    assumedNodes: 1,
    version: 1,
  });

  it.each([
    ['a standalone server', false],
    ['a Cluster', true],
  ] as const)(
    'on %s: 16 fleets cost one membership.lua call per slot, each answered its own',
    async (_name, onCluster) => {
      const client = onCluster ? cluster().client : standalone().redis;
      const admins = onCluster ? cluster().cluster.nodes.map((node) => new Redis(node.url)) : [standalone().redis];
      try {
        const engine = redisEngine({ redis: client, timeoutMs: 5_000 });
        const prefix = nextPrefix();
        const fleets = Array.from({ length: 16 }, (_, i) => `f${i}`);
        // Fleet f_i has i % 3 + 1 nodes before the counted turn: each answer must be its own fleet's.
        for (const [i, fleet] of fleets.entries())
          for (let n = 0; n < (i % 3) + 1; n++) await engine.heartbeat(beatOf(prefix, fleet, `n${n}`), 10_000 + n);
        const slots = new Set(fleets.map((fleet) => calculateSlot(membershipKeys(prefix, fleet)[0])));
        const before = await scriptCalls(admins);
        const answers = await Promise.all(fleets.map((fleet) => engine.heartbeat(beatOf(prefix, fleet, 'n0'), 11_100)));
        expect((await scriptCalls(admins)) - before).toBe(onCluster ? slots.size : 1);
        expect(answers.map((answer) => answer.nodes)).toEqual(fleets.map((_, i) => (i % 3) + 1));
      } finally {
        if (onCluster) for (const admin of admins) admin.disconnect();
      }
    },
  );

  it("on a Cluster: a primary that does not answer fails its own fleets' heartbeats, not the others'", async () => {
    const { cluster: testCluster, client } = cluster();
    const engine = redisEngine({ redis: client, timeoutMs: 500 });
    const prefix = nextPrefix();
    const fleets = Array.from({ length: 12 }, (_, i) => `g${i}`);
    for (const fleet of fleets) await engine.heartbeat(beatOf(prefix, fleet, 'n0'), 20_000);
    // The primary of the first fleet's slot stops answering (SIGSTOP): its fleets fail, the rest are answered.
    const owners = await Promise.all(
      fleets.map(async (fleet) => {
        const slot = calculateSlot(membershipKeys(prefix, fleet)[0]);
        const range = (await client.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to);
        return range?.[2]?.[1] as number;
      }),
    );
    const victim = testCluster.nodes.find((node) => node.port === owners[0]);
    expect(victim).toBeDefined();
    victim?.process?.kill('SIGSTOP');
    try {
      const outcomes = await Promise.allSettled(
        fleets.map((fleet) => engine.heartbeat(beatOf(prefix, fleet, 'n0'), 20_500)),
      );
      expect(outcomes.map((o) => o.status)).toEqual(
        owners.map((port) => (port === victim?.port ? 'rejected' : 'fulfilled')),
      );
      expect(owners.some((port) => port !== victim?.port)).toBe(true);
    } finally {
      victim?.process?.kill('SIGCONT');
    }
  });
});

describe('redisEngine deadline', () => {
  it('rejects within its timeoutMs when the server is paused (SIGSTOP)', async () => {
    const server = await startTestRedis();
    const { Redis } = await import('ioredis');
    const client = new Redis(server.url);
    try {
      const engine = redisEngine({ redis: client, timeoutMs: 100 });
      const rules = rulesOf(nextPrefix(), [fixedWindow({ limit: 5, windowMs: 60_000, name: 'fw' })]);
      const ask = { key: 'k', permits: 1, maxWaitMs: 0, peek: false };
      await decideAt(engine, rules, [ask], 1_000);
      server.process?.kill('SIGSTOP');
      const started = Date.now();
      await expect(decideAt(engine, rules, [ask], 1_000)).rejects.toThrow();
      await expect(engine.adjust(rules, 'k', { op: 'reset' }, 1_000)).rejects.toThrow();
      await expect(engine.readConfig(rules.prefix)).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      server.process?.kill('SIGCONT');
      client.disconnect();
      await server.stop();
    }
  });
});
