/**
 * What a fleet's heartbeats cost Redis as the fleet grows: N nodes (N = 64, 256, 1,000), each a store with
 * failMode 'local' holding one limiter, heartbeating its presence (presence.lua) on one prefix; and, beside
 * it, divided mode's membership heartbeat (membership.lua) at the same N, which reports the node's demand and
 * reads its fleet's summary (the division itself runs once per interval for the whole fleet). Each N runs on
 * a redis-server of its own: first every node joins (its first heartbeat, measured apart: a join makes the
 * fleet's summary stale), then a few heartbeat intervals are measured. Redis's own accounting
 * (INFO commandstats: microseconds per script call) gives the cost of one heartbeat, and INFO cpu the
 * server's CPU per second. A heartbeat must cost the same whatever N (O(log N)).
 *
 *   node --conditions=sluice-source --import tsx bench/src/presence.bench.ts
 */
import { fileURLToPath } from 'node:url';
import { createLimiter, fixedWindow, type Limiter, type Store } from '@sluice/core';
import { dividedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, redisCpuUs, scriptStats, writeJson } from './harness.js';

const SIZES = (process.env.PRESENCE_NODES ?? '64,256,1000').split(',').map(Number);
const HEARTBEAT_MS = 1_000;
const SECONDS = Number(process.env.PRESENCE_SECONDS ?? 5);

interface Row {
  mode: 'presence (exact, leased: failMode local)' | 'divided membership';
  nodes: number;
  /** Redis time per heartbeat call, from commandstats (script calls only: the fleet's heartbeats). */
  usPerHeartbeat: number;
  /** Redis time per script call while the fleet joined (every node's first heartbeat at once, and its start-up check). */
  usPerJoin: number;
  /** redis-server CPU over the run, as a share of one core. */
  redisCpuShare: number;
  /** Script calls per second the fleet sent. */
  callsPerSecond: number;
}

async function run(mode: Row['mode'], nodes: number): Promise<Row> {
  const server = await spawnRedisServer();
  const client = new Redis(server.url);
  const stores: (Store & { close(): Promise<void> })[] = [];
  const limiters: Limiter[] = [];
  try {
    await client.config('RESETSTAT');
    for (let i = 0; i < nodes; i++) {
      const nodeId = `node-${i}`;
      const store =
        mode === 'divided membership'
          ? dividedStore({ redis: client, nodeId, heartbeatMs: HEARTBEAT_MS })
          : redisStore({ redis: client, nodeId, heartbeatMs: HEARTBEAT_MS, denyCache: false });
      stores.push(store);
      limiters.push(createLimiter({ rules: fixedWindow({ limit: 1_000, windowMs: 1_000 }), store, prefix: 'fleet' }));
    }
    // One interval for every node's first heartbeat, then measure whole intervals.
    await new Promise((resolve) => setTimeout(resolve, 0.5 * HEARTBEAT_MS));
    const joined = await scriptStats(client);
    await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS));
    await client.config('RESETSTAT');
    const cpuBefore = await redisCpuUs(client);
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1_000));
    const elapsedMs = performance.now() - started;
    const { calls, usec } = await scriptStats(client);
    const cpu = (await redisCpuUs(client)) - cpuBefore;
    return {
      mode,
      nodes,
      usPerHeartbeat: Number((usec / Math.max(calls, 1)).toFixed(2)),
      usPerJoin: Number((joined.usec / Math.max(joined.calls, 1)).toFixed(2)),
      redisCpuShare: Number((cpu / (elapsedMs * 1_000)).toFixed(4)),
      callsPerSecond: Math.round((calls * 1_000) / elapsedMs),
    };
  } finally {
    await Promise.all(limiters.map((l) => l.close()));
    await Promise.all(stores.map((s) => s.close()));
    client.disconnect();
    await server.stop();
  }
}

const ROUNDS = Number(process.env.PRESENCE_ROUNDS ?? 3);
const samples = new Map<string, Row[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const nodes of SIZES) {
    for (const mode of ['presence (exact, leased: failMode local)', 'divided membership'] as const) {
      const row = await run(mode, nodes);
      const id = `${mode}@${nodes}`;
      samples.set(id, [...(samples.get(id) ?? []), row]);
    }
  }
}
const rows = [...samples.values()].map((list) => ({
  mode: (list[0] as Row).mode,
  nodes: (list[0] as Row).nodes,
  usPerHeartbeat: median(list.map((r) => r.usPerHeartbeat)),
  usPerJoin: median(list.map((r) => r.usPerJoin)),
  redisCpuShare: median(list.map((r) => r.redisCpuShare)),
  callsPerSecond: median(list.map((r) => r.callsPerSecond)),
}));
console.table(
  rows.map((r) => ({
    mode: r.mode,
    nodes: r.nodes,
    'us of Redis per heartbeat': r.usPerHeartbeat,
    'us per join': r.usPerJoin,
    'Redis CPU (share of a core)': `${(100 * r.redisCpuShare).toFixed(1)}%`,
    'heartbeats per second': r.callsPerSecond,
  })),
);
writeJson(fileURLToPath(new URL('../results/presence.json', import.meta.url)), {
  heartbeatMs: HEARTBEAT_MS,
  seconds: SECONDS,
  rounds: ROUNDS,
  rows,
});
