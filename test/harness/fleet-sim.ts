/**
 * A fleet in one process: N nodes, each a store of its own (its own node id) holding one limiter, sharing a few
 * Redis clients, offered Poisson traffic at a rate per node, in real time. What runs per node runs for real
 * (heartbeats, leases, draws on the reserve); only the processes are folded into one. Counts what each
 * second admitted, what Redis spent (INFO cpu, commandstats) and what this process spent, so the bench and the
 * tests read the same figures.
 */
import { type Algorithm, type Limiter, createLimiter, observeSluice } from '@sluice/core';
import { type DividedStore, type LeasedStore, dividedStore, leasedStore } from '@sluice/hybrid';
import { type RedisStore, redisStore } from '@sluice/redis';
import { deadlineCounts } from '@sluice/core/internal';
import type { Redis } from 'ioredis';

export type FleetMode = 'exact' | 'leased' | 'divided';

/** A node's store, whichever the mode. */
export type FleetStore = DividedStore | LeasedStore | RedisStore;

/** What one node does over time. */
export interface NodePlan {
  /** Offered permits per second at `ms` after the start (Poisson arrivals). */
  rate(ms: number): number;
  /** When the node starts and stops, in ms after the start (default: the whole run). */
  readonly startMs?: number;
  readonly stopMs?: number;
  /** Stopped without closing (its heartbeats just cease): needs a client of its own, disconnected at stopMs. */
  readonly killed?: boolean;
}

export interface FleetSpec {
  readonly mode: FleetMode;
  readonly plans: readonly NodePlan[];
  readonly rule: Algorithm;
  readonly durationMs: number;
  /** Clients the live nodes share (round robin). */
  readonly clients: readonly Redis[];
  /** Makes a client of its own for a node that will be killed. */
  readonly ownClient?: () => Redis;
  readonly heartbeatMs?: number;
  readonly reserve?: number;
  readonly failMode?: 'local' | 'open' | 'closed';
  /** The key a node's request asks for (default: one hot key). */
  readonly key?: (node: number, random: () => number) => string;
  readonly seed?: number;
  readonly tickMs?: number;
  /** Keep every grant's time (ms since the start, when its answer came): for bound checks over any interval. */
  readonly recordTimes?: boolean;
  /** Called as each node starts, with its store (to listen to its events). */
  readonly onStart?: (node: number, store: FleetStore) => void;
  /**
   * The clock starts once every first node's store is ready (`store.ready()`, as a readiness probe waits):
   * 1,000 clients connecting in one process otherwise miss deadlines, and their fail modes decide before
   * Redis ever counted the fleet (each holding 1 / assumedNodes).
   */
  readonly readyFirst?: boolean;
  /** Called when the run's clock starts (every first node made, and ready with readyFirst). */
  readonly onClockStart?: () => void;
}

export interface FleetRun {
  /** Permits admitted in each second of the run (by when they were asked). */
  readonly admittedPerSecond: number[];
  /** Permits offered in each second. */
  readonly offeredPerSecond: number[];
  /** Grants in each second by where they came from (memory, redis, lease, share, fallback...). */
  readonly grantsBySource: Record<string, number[]>;
  /** Every grant's time, in ms since the start, ascending (with recordTimes). */
  readonly grantTimes: number[];
  readonly decisions: number;
  readonly storeErrors: number;
  /** Grants the fail mode made (source 'fallback'). */
  readonly fallbackGrants: number;
  /** This process's CPU per decision, in microseconds. */
  readonly clientUsPerDecision: number;
  /** The most a timer tick ran late, in ms (this process's own overload). */
  readonly worstTickLagMs: number;
  /** Deadlines extended because this process was late, and deadlines missed (counted as Redis failing). */
  readonly deadlinesExtended: number;
  readonly deadlinesMissed: number;
}

/** A small seeded generator (mulberry32), so a scenario's arrivals repeat. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A Poisson draw of mean `mean` (Knuth's for small means, a normal approximation past 30). */
export function poisson(mean: number, random: () => number): number {
  if (mean <= 0) return 0;
  if (mean > 30) {
    const u = Math.max(random(), 1e-12);
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    return Math.max(0, Math.round(mean + Math.sqrt(mean) * z));
  }
  const limit = Math.exp(-mean);
  let k = 0;
  let p = random();
  while (p > limit) {
    k++;
    p *= random();
  }
  return k;
}

interface Node {
  readonly plan: NodePlan;
  readonly store: FleetStore;
  readonly limiter: Limiter;
  readonly client: Redis;
  stopped: boolean;
}

function makeStore(spec: FleetSpec, client: Redis, nodeId: string): FleetStore {
  const heartbeatMs = spec.heartbeatMs ?? 1_000;
  const common = { redis: client, nodeId, heartbeatMs };
  if (spec.mode === 'divided')
    return dividedStore({
      ...common,
      share: 'demand',
      ...(spec.reserve === undefined ? {} : { reserve: spec.reserve }),
    });
  if (spec.mode === 'leased') return leasedStore({ ...common, failMode: spec.failMode ?? 'local' });
  return redisStore({ ...common, failMode: spec.failMode ?? 'local', denyCache: false });
}

/** Runs the fleet for spec.durationMs and answers what it admitted; every node is closed (or killed) at the end. */
export async function simulateFleet(spec: FleetSpec): Promise<FleetRun> {
  const random = seededRandom(spec.seed ?? 1);
  const tickMs = spec.tickMs ?? 10;
  const seconds = Math.ceil(spec.durationMs / 1_000);
  const admitted = new Array<number>(seconds).fill(0);
  const offered = new Array<number>(seconds).fill(0);
  let decisions = 0;
  const grantTimes: number[] = [];
  let storeErrors = 0;
  let fallbackGrants = 0;
  let worstLag = 0;
  const nodes: (Node | undefined)[] = spec.plans.map(() => undefined);
  const start = (i: number): Node => {
    const plan = spec.plans[i] as NodePlan;
    const client = plan.killed && spec.ownClient ? spec.ownClient() : (spec.clients[i % spec.clients.length] as Redis);
    const store = makeStore(spec, client, `node-${i}`);
    // Every store emits 'store-error' with the same arguments.
    (store as DividedStore).on('store-error', () => storeErrors++);
    spec.onStart?.(i, store);
    const limiter = createLimiter({ rules: spec.rule, store, prefix: 'fleet' });
    return { plan, store, limiter, client, stopped: false };
  };
  const pending = new Set<Promise<unknown>>();
  const bySource: Record<string, number[]> = {};
  let t0 = performance.now();
  const unobserve = observeSluice({
    decision: (e) => {
      if (!e.decision.allowed) return;
      const second = Math.floor((performance.now() - t0) / 1_000);
      const counts = (bySource[e.source ?? 'unknown'] ??= new Array<number>(seconds).fill(0));
      if (second < seconds) counts[second] = (counts[second] ?? 0) + 1;
    },
  });
  const cpuBefore = process.cpuUsage();
  const deadlinesBefore = deadlineCounts();
  // The nodes there from the start are made before the clock starts (making 1,000 stores takes a while).
  spec.plans.forEach((plan, i) => {
    if ((plan.startMs ?? 0) <= 0) nodes[i] = start(i);
  });
  if (spec.readyFirst === true) await Promise.all(nodes.map((node) => node?.store.ready()));
  t0 = performance.now();
  spec.onClockStart?.();
  await new Promise<void>((resolve) => {
    let next = t0;
    let last = t0;
    const tick = () => {
      const now = performance.now();
      worstLag = Math.max(worstLag, now - next);
      const ms = now - t0;
      if (ms >= spec.durationMs) return resolve();
      // Arrivals over the time since the last tick, not one tick's worth: a busy process (1,000 clients
      // through a failover) still offers the fleet's load, in larger batches, rather than less of it.
      const elapsed = Math.min(now - last, 1_000);
      last = now;
      const second = Math.floor(ms / 1_000);
      spec.plans.forEach((plan, i) => {
        const startMs = plan.startMs ?? 0;
        const stopMs = plan.stopMs ?? Number.POSITIVE_INFINITY;
        let node = nodes[i];
        if (node === undefined && ms >= startMs && ms < stopMs) nodes[i] = node = start(i);
        if (node === undefined || node.stopped) return;
        if (ms >= stopMs) {
          node.stopped = true;
          if (plan.killed) node.client.disconnect();
          else pending.add(node.store.close());
          return;
        }
        const arrivals = poisson((plan.rate(ms) * elapsed) / 1_000, random);
        for (let a = 0; a < arrivals; a++) {
          offered[second] = (offered[second] ?? 0) + 1;
          const key = spec.key?.(i, random) ?? 'hot';
          const decided = node.limiter.tryAcquire(key).then((d) => {
            decisions++;
            if (d.allowed) admitted[second] = (admitted[second] ?? 0) + 1;
            if (d.allowed && spec.recordTimes === true) grantTimes.push(performance.now() - t0);
            if (d.allowed && d.source === 'fallback') fallbackGrants++;
          });
          pending.add(decided);
          void decided.finally(() => pending.delete(decided));
        }
      });
      next += tickMs;
      setTimeout(tick, Math.max(0, next - performance.now()));
    };
    tick();
  });
  await Promise.allSettled([...pending]);
  unobserve();
  const cpu = process.cpuUsage(cpuBefore);
  const deadlines = deadlineCounts();
  await Promise.allSettled(nodes.map((node) => (node === undefined || node.stopped ? undefined : node.store.close())));
  return {
    admittedPerSecond: admitted,
    offeredPerSecond: offered,
    grantsBySource: bySource,
    grantTimes: grantTimes.sort((a, b) => a - b),
    decisions,
    storeErrors,
    fallbackGrants,
    clientUsPerDecision: (cpu.user + cpu.system) / Math.max(decisions, 1),
    worstTickLagMs: worstLag,
    deadlinesExtended: deadlines.extended - deadlinesBefore.extended,
    deadlinesMissed: deadlines.missed - deadlinesBefore.missed,
  };
}
