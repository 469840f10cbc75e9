/**
 * A fleet through a Redis outage: N nodes (1,000 by default), each a store with an ioredis client of its own (as
 * real nodes have), in exact mode (failMode 'local') and divided mode, one token bucket of 4,000 per second
 * (capacity 4,000) offered 1.2 x that as Poisson arrivals (test/harness/fleet-sim.ts). At 5 s the redis-server is
 * killed (SIGKILL: every connection drops and new ones are refused); OUTAGE_MS later (30 s) a new, empty one is
 * started on the same port. Reports per mode:
 * - connection attempts per second the clients made while Redis was away (ioredis 'connecting' events: the
 *   client's own backoff plus the store's nudges, at most one per probe interval);
 * - after the return: connections Redis accepted in its first second and in its busiest 100 ms (sampled from
 *   INFO stats), and when every store was healthy again and every node counted the whole fleet again, in
 *   heartbeats (1 s) after the return;
 * - admitted per second against the limit (over: the most a second admitted past it), the fail mode's grants,
 *   and what the fail modes charged to Redis on its return.
 *
 *   node --conditions=sluice-source --import tsx bench/src/outage.bench.ts   (npm run bench:outage)
 *   OUTAGE_NODES=256 OUTAGE_MS=10000 ...                                      (smaller, shorter)
 *   OUTAGE_KIND=failover ...   (a 3-master Cluster with replicas: the master of the hot key's slot killed, its
 *                               replica promoted; results in failover.json)
 */
import { fileURLToPath } from 'node:url';
import { tokenBucket } from '@sluice/core';
import type { FallbackChargedEvent } from '@sluice/redis';
import { membershipKeys } from '@sluice/redis/internal';
import { fleetKey } from '../../packages/redis/src/key-layout.js';
import { type Cluster, Redis } from 'ioredis';
import { type FleetMode, type FleetStore, simulateFleet } from '../../test/harness/fleet-sim.js';
import { failOverMasterOf, startTestCluster } from '../../test/harness/redis-cluster.js';
import { type TestRedis, spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, overBound, writeJson } from './harness.js';

const NODES = Number(process.env.OUTAGE_NODES ?? 1_000);
const OUTAGE_MS = Number(process.env.OUTAGE_MS ?? 30_000);
const MODES = (process.env.OUTAGE_MODES ?? 'exact,divided').split(',') as FleetMode[];
const KIND = (process.env.OUTAGE_KIND ?? 'restart') as 'restart' | 'failover';
const DOWN_AT_MS = 5_000;
const AFTER_MS = 10_000;
const LIMIT = 4_000;
const OFFERED = 1.2 * LIMIT;
const HEARTBEAT_MS = 1_000;
const RULE = tokenBucket({ capacity: LIMIT, refillPerSecond: LIMIT });

export interface OutageRow {
  /** 'restart': the server killed and started again empty; 'failover': a Cluster master killed, its replica promoted. */
  readonly kind: 'restart' | 'failover';
  readonly mode: FleetMode;
  readonly nodes: number;
  /** From the kill until Redis served again (a failover: until the replica serves the slot as master). */
  readonly outageMs: number;
  /** Client connection attempts per second while Redis was away (median and most of its seconds; restart only). */
  readonly attemptsPerSecondMedian: number;
  readonly attemptsPerSecondMost: number;
  /**
   * Connections the new Redis had accepted by its first sample (its first ~100 ms up, at `firstSampleMs`), by
   * 1 s, and in its busiest 100 ms after the first sample.
   */
  readonly connectionsByFirstSample: number;
  readonly firstSampleMs: number;
  readonly connectionsFirstSecond: number;
  readonly connectionsBusiest100Ms: number;
  /** From Redis's return until every store was healthy again (exact) / heard a heartbeat answered (divided), in s. */
  readonly allHealthyAfterS: number | undefined;
  /** From Redis's return until its fleet set (presence, or divided mode's members) held every node again, in heartbeats. */
  readonly fleetWholeAfterHeartbeats: number | undefined;
  /** Admitted in each second, the whole run; and the most a second admitted past the limit, as a share of it. */
  readonly admittedPerSecond: readonly number[];
  readonly worstOver: number;
  /**
   * The most any run of whole seconds admitted past the bucket's bound, capacity + rate x its length (0: never
   * over); the fleet's start-up (second 0, nodes connecting) left out.
   */
  readonly overBound: number;
  readonly fallbackGrants: number;
  /** What the fail modes charged to Redis on its return, over every node. */
  readonly chargedPermits: number;
  readonly storeErrors: number;
  /** Grants in each second by where they were decided (redis, fallback, share, lease...). */
  readonly grantsBySource: Record<string, readonly number[]>;
}

async function stats(admin: Redis): Promise<number> {
  const info = await admin.info('stats');
  return Number(/^total_connections_received:(\d+)/m.exec(info)?.[1] ?? 0);
}

/** The Redis a run breaks: its clients, the fault (resolving when Redis serves again), what reads it after. */
interface Target {
  readonly clients: readonly (Redis | Cluster)[];
  /** Breaks Redis; resolves with performance.now() once it serves again. */
  fault(): Promise<number>;
  /** A client to the Redis that serves after the fault, and (standalone) its connections accepted so far. */
  after(): { admin: Redis | Cluster; connections: (() => Promise<number>) | undefined };
  stop(): Promise<void>;
}

/** One redis-server, killed and started again empty on its port `OUTAGE_MS` later; a client per node. */
async function restartedServer(onAttempt: () => void): Promise<Target> {
  let server: TestRedis = await spawnRedisServer();
  const port = server.port;
  const clients = Array.from({ length: NODES }, () => {
    const client = new Redis({ port, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    client.on('connecting', onAttempt);
    return client;
  });
  let admin: Redis | undefined;
  return {
    clients,
    async fault() {
      server.process?.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
      // Redis is back from its spawn (it listens within milliseconds): waiting for its PING to answer here
      // would stamp the return late by however long 1,000 reconnecting clients keep this process busy.
      const spawnedAt = performance.now();
      server = await spawnRedisServer([], { port });
      return spawnedAt;
    },
    after() {
      const client = new Redis({ port });
      admin = client;
      return { admin: client, connections: () => stats(client) };
    },
    async stop() {
      for (const client of clients) client.disconnect();
      admin?.disconnect();
      await server.stop();
    },
  };
}

/**
 * A 3-master Cluster with a replica each; the master serving the hot key's slot (its state; the fleet's sets
 * live in other slots) is killed and its replica takes over. Nodes share OUTAGE_CLIENTS Cluster clients (a
 * Cluster client holds a connection to every node: 1,000 of them in one process would be 6,000 sockets).
 */
async function failedOverCluster(): Promise<Target> {
  const cluster = await startTestCluster();
  const clients = Array.from({ length: Math.min(NODES, Number(process.env.OUTAGE_CLIENTS ?? 50)) }, () => {
    const client = cluster.client();
    client.on('error', () => {});
    return client;
  });
  let admin: Cluster | undefined;
  return {
    clients,
    fault: () => failOverMasterOf(cluster, 'hot'),
    after() {
      admin = cluster.client();
      admin.on('error', () => {});
      return { admin, connections: undefined };
    },
    async stop() {
      for (const client of clients) client.disconnect();
      admin?.disconnect();
      await cluster.stop();
    },
  };
}

async function run(mode: FleetMode): Promise<OutageRow> {
  const attempts = new Map<number, number>();
  let t0 = 0;
  const target =
    KIND === 'failover'
      ? await failedOverCluster()
      : await restartedServer(() => {
          const second = Math.floor((performance.now() - t0) / 1_000);
          attempts.set(second, (attempts.get(second) ?? 0) + 1);
        });
  let downAt = 0;
  let returnedAt: number | undefined;
  const unhealthy = new Set<number>();
  let allHealthyAt: number | undefined;
  let charged = 0;
  let began = (): void => {};
  const started = new Promise<void>((resolve) => (began = resolve));
  const onStart = (i: number, store: FleetStore) => {
    const s = store as FleetStore & { on(event: string, listener: (...args: unknown[]) => void): unknown };
    s.on('store-error', () => unhealthy.add(i));
    const healthy = () => {
      if (!unhealthy.delete(i) || returnedAt === undefined || unhealthy.size > 0) return;
      allHealthyAt ??= performance.now();
    };
    s.on('store-recovered', healthy);
    s.on('fallback-charged', (e) => {
      charged += (e as FallbackChargedEvent).permits;
    });
    // Divided mode's heartbeat answered: its store is back.
    s.on('membership', healthy);
  };
  const samples: { at: number; connections: number; members: number }[] = [];
  const fleetSet = mode === 'divided' ? membershipKeys('fleet', RULE.name)[0] : fleetKey('fleet');
  const outage = (async () => {
    await started;
    t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, DOWN_AT_MS));
    downAt = performance.now();
    const back = await target.fault();
    returnedAt = back;
    const { admin, connections } = target.after();
    const until = back + AFTER_MS - 500;
    while (performance.now() < until) {
      samples.push({
        at: performance.now() - back,
        connections: connections === undefined ? 0 : await connections(),
        members: await admin.zcard(fleetSet),
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const fleet = simulateFleet({
    mode,
    plans: Array.from({ length: NODES }, () => ({ rate: () => OFFERED / NODES })),
    rule: RULE,
    // A failover takes what the Cluster takes (about 2 s here): the run ends AFTER_MS past a 30 s budget.
    durationMs: DOWN_AT_MS + (KIND === 'failover' ? 5_000 : OUTAGE_MS) + AFTER_MS,
    clients: target.clients as Redis[],
    heartbeatMs: HEARTBEAT_MS,
    seed: NODES,
    // The outage is measured, not 1,000 clients connecting in one process (see FleetSpec.readyFirst).
    readyFirst: true,
    onClockStart: () => began(),
    onStart,
  });
  const [r] = await Promise.all([fleet, outage]);
  const downSeconds = [...attempts.entries()]
    .filter(([s]) => s * 1_000 >= DOWN_AT_MS + 1_000 && s * 1_000 < DOWN_AT_MS + OUTAGE_MS)
    .map(([, n]) => n);
  const perWindow = samples.slice(1).map((s, k) => s.connections - (samples[k] as { connections: number }).connections);
  const firstSecond = samples.find((s) => s.at >= 1_000)?.connections ?? 0;
  const back = returnedAt as number;
  const whole = samples.find((s) => s.members >= NODES)?.at;
  await target.stop();
  const round = (x: number, digits = 2) => Number(x.toFixed(digits));
  return {
    kind: KIND,
    mode,
    nodes: NODES,
    outageMs: round(back - downAt, 0),
    attemptsPerSecondMedian: median(downSeconds),
    attemptsPerSecondMost: Math.max(0, ...downSeconds),
    connectionsByFirstSample: samples[0]?.connections ?? 0,
    firstSampleMs: round(samples[0]?.at ?? 0, 0),
    connectionsFirstSecond: firstSecond,
    connectionsBusiest100Ms: Math.max(0, ...perWindow),
    allHealthyAfterS: allHealthyAt === undefined ? undefined : round((allHealthyAt - back) / 1_000),
    fleetWholeAfterHeartbeats: whole === undefined ? undefined : round(whole / HEARTBEAT_MS),
    admittedPerSecond: r.admittedPerSecond,
    worstOver: round(Math.max(0, ...r.admittedPerSecond.map((a) => a / LIMIT - 1)), 4),
    overBound: overBound(r.admittedPerSecond.slice(1), LIMIT, LIMIT),
    fallbackGrants: r.fallbackGrants,
    chargedPermits: charged,
    storeErrors: r.storeErrors,
    grantsBySource: r.grantsBySource,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows: OutageRow[] = [];
  for (const mode of MODES) {
    const row = await run(mode);
    rows.push(row);
    console.log(JSON.stringify(row));
  }
  console.table(rows.map(({ admittedPerSecond: _, ...shown }) => shown));
  writeJson(fileURLToPath(new URL(`../results/${KIND === 'failover' ? 'failover' : 'outage'}.json`, import.meta.url)), {
    limitPerSecond: LIMIT,
    offeredPerSecond: OFFERED,
    downAtMs: DOWN_AT_MS,
    rows,
  });
}
