/**
 * Exact vs leased vs divided mode, in one run against one spawned redis-server: for N = 1, 4 and 8 worker
 * processes hammering one hot token bucket for a few seconds (64 callers each), under the limit and
 * saturated, the fleet's decisions per second, Redis commands per decision (INFO commandstats: every
 * command, those run inside scripts included) and admitted / limit (C + R*T). Then exact vs leased mode in
 * one process over many keys (a hot key, 10,000 keys, 1,000,000 keys each asked once; 128 in flight): per-user
 * limits have a long tail of cold keys, where a lease must cost no more than an exact decision. Writes
 * bench/results/hybrid.json.
 *
 * Run: pnpm --filter @sluice/bench bench:hybrid   (SECONDS=4 per run by default)
 */
import { fileURLToPath } from 'node:url';
import { createLimiter, type Limiter, tokenBucket } from '@sluice/core';
import { leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { runFleet } from '@sluice/example-multi-node/fleet';
import type { Mode } from '@sluice/example-multi-node/worker-config';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { fmt, median, scriptCalls as scriptCallsOf, totalCommands as totalCommandsOf, writeJson } from './harness.js';

const SECONDS = Number(process.env.SECONDS ?? 4);
const CAPACITY = 1_000;
const RATE = 1_000;
const server = await spawnRedisServer();
const redis = new Redis(server.url);

const totalCommands = () => totalCommandsOf(redis);

type Scenario = 'under the limit' | 'saturated';

interface Row {
  scenario: Scenario;
  nodes: number;
  mode: Mode;
  decisionsPerSecond: number;
  commandsPerDecision: number;
  admittedOfLimit: number;
}

/**
 * 'under the limit': a bucket far above what the fleet can ask (50M/s), so every decision is a grant: the
 * regime leasing is for (exact mode pays a Redis round trip per batch of grants). 'saturated': 1,000/s
 * asked for by far more callers, so most decisions are denials (exact mode's deny cache answers many locally).
 */
const SCENARIOS: Record<Scenario, { capacity: number; rate: number }> = {
  'under the limit': { capacity: 50_000_000, rate: 50_000_000 },
  saturated: { capacity: CAPACITY, rate: RATE },
};

const rows: Row[] = [];
for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
  const { capacity, rate } = SCENARIOS[scenario];
  for (const nodes of [1, 4, 8]) {
    for (const mode of ['exact', 'leased', 'divided'] as const) {
      const before = await totalCommands();
      const result = await runFleet({
        nodes,
        mode,
        redisUrl: server.url,
        rule: { kind: 'tokenBucket', capacity, refillPerSecond: rate },
        durationMs: SECONDS * 1_000,
      });
      const commands = (await totalCommands()) - before;
      const decisions = result.nodes.reduce((s, n) => s + n.decisions, 0);
      const admitted = result.nodes.reduce((s, n) => s + n.admitted, 0);
      const row = {
        scenario,
        nodes,
        mode,
        decisionsPerSecond: decisions / SECONDS,
        commandsPerDecision: commands / decisions,
        admittedOfLimit: admitted / (capacity + rate * SECONDS),
      };
      rows.push(row);
      console.log(
        `${scenario.padEnd(15)} N=${nodes} ${mode.padEnd(7)} ${fmt(row.decisionsPerSecond).padStart(8)} ` +
          `decisions/s  ${row.commandsPerDecision.toFixed(5)} commands/decision  admitted ` +
          `${(100 * row.admittedOfLimit).toFixed(1)}% of C + R*T`,
      );
    }
  }
}

// The picture: every admission's time, saturated, TIMELINE_NODES processes, binned per 100 ms from the start.
const TIMELINE_NODES = 4;
const BUCKET_MS = 100;
const series: Record<string, number[]> = {};
for (const mode of ['exact', 'leased', 'divided'] as const) {
  const result = await runFleet({
    nodes: TIMELINE_NODES,
    mode,
    redisUrl: server.url,
    rule: { kind: 'tokenBucket', capacity: CAPACITY, refillPerSecond: RATE },
    durationMs: SECONDS * 1_000,
    recordTimes: true,
  });
  const bins = new Array<number>(Math.ceil((SECONDS * 1_000) / BUCKET_MS)).fill(0);
  for (const node of result.nodes) {
    for (const t of node.times) {
      const bin = Math.floor((t - result.startAt) / BUCKET_MS);
      if (bin >= 0 && bin < bins.length) bins[bin] = (bins[bin] as number) + 1;
    }
  }
  series[mode] = bins;
  console.log(`timeline ${mode}: ${bins.reduce((a, b) => a + b, 0)} admitted in ${SECONDS} s`);
}
const timelines = {
  nodes: TIMELINE_NODES,
  bucketMs: BUCKET_MS,
  capacity: CAPACITY,
  rate: RATE,
  seconds: SECONDS,
  series,
};

// Many keys, one process, 128 in flight, every decision a grant: exact vs leased, interleaved rounds.
type KeyWorkload = 'hot key' | '10,000 keys' | '1,000,000 keys, each once';
const ONCE = Number(process.env.ONCE_KEYS ?? 1_000_000);
const KEY_WORKLOADS: Record<KeyWorkload, { decisions: number; key: (i: number) => string }> = {
  'hot key': { decisions: 200_000, key: () => 'hot' },
  '10,000 keys': { decisions: 200_000, key: (i) => `user:${i % 10_000}` },
  '1,000,000 keys, each once': { decisions: ONCE, key: (i) => `user:${i}` },
};
interface KeyRow {
  workload: KeyWorkload;
  mode: 'exact' | 'leased';
  decisionsPerSecond: number;
  /** Script calls the client sent per decision. */
  clientCommandsPerDecision: number;
  /** Every command Redis ran per decision, those inside scripts included. */
  redisCommandsPerDecision: number;
}
/** The limiter, and what closes it with everything it opened (an exact store's pub/sub connection). */
function keyedLimiter(mode: 'exact' | 'leased', prefix: string): { limiter: Limiter; close: () => Promise<void> } {
  const algorithm = tokenBucket({ capacity: 50_000_000, refillPerSecond: 50_000_000 });
  const store =
    mode === 'leased'
      ? leasedStore({ redis, nodeId: 'bench', timeoutMs: 5_000 })
      : redisStore({ redis, nodeId: 'bench', timeoutMs: 5_000 });
  const limiter = createLimiter({ rules: algorithm, store, prefix });
  return {
    limiter,
    close: async () => {
      await limiter.close();
      await store.close();
    },
  };
}
const KEY_ROUNDS = Number(process.env.KEY_ROUNDS ?? 3);
const keySamples = new Map<string, KeyRow[]>();
let keyRun = 0;
for (let round = 0; round < KEY_ROUNDS; round++) {
  for (const workload of Object.keys(KEY_WORKLOADS) as KeyWorkload[]) {
    // Each round swaps which mode goes first, so neither always runs on the heap and server the other left.
    for (const mode of round % 2 === 0 ? (['exact', 'leased'] as const) : (['leased', 'exact'] as const)) {
      await redis.flushall();
      const { decisions, key } = KEY_WORKLOADS[workload];
      const { limiter, close } = keyedLimiter(mode, `k${++keyRun}`);
      for (let i = 0; i < 200; i++) await limiter.tryAcquire(`warm:${i}`);
      const [commandsBefore, callsBefore] = [await totalCommands(), await scriptCallsOf(redis)];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 128 }, async () => {
          for (let i = next++; i < decisions; i = next++) await limiter.tryAcquire(key(i));
        }),
      );
      const elapsed = (performance.now() - started) / 1000;
      const row: KeyRow = {
        workload,
        mode,
        decisionsPerSecond: decisions / elapsed,
        clientCommandsPerDecision: ((await scriptCallsOf(redis)) - callsBefore) / decisions,
        redisCommandsPerDecision: ((await totalCommands()) - commandsBefore) / decisions,
      };
      await close();
      const k = `${workload}|${mode}`;
      keySamples.set(k, [...(keySamples.get(k) ?? []), row]);
      console.log(
        `${workload.padEnd(26)} ${mode.padEnd(7)} ${fmt(row.decisionsPerSecond).padStart(8)} decisions/s  ` +
          `${row.clientCommandsPerDecision.toFixed(4)} client / ${row.redisCommandsPerDecision.toFixed(4)} Redis ` +
          'commands per decision',
      );
    }
  }
}
const keyRows: KeyRow[] = [...keySamples.values()].map((rs) => ({
  ...(rs[0] as KeyRow),
  decisionsPerSecond: median(rs.map((r) => r.decisionsPerSecond)),
  clientCommandsPerDecision: median(rs.map((r) => r.clientCommandsPerDecision)),
  redisCommandsPerDecision: median(rs.map((r) => r.redisCommandsPerDecision)),
}));

for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
  console.log(
    `\n${scenario}:\n| N | mode | fleet decisions/s | vs exact | Redis commands / decision | admitted / (C + R*T) |`,
  );
  console.log('| ---: | --- | ---: | ---: | ---: | ---: |');
  for (const row of rows.filter((r) => r.scenario === scenario)) {
    const exact = rows.find((r) => r.scenario === scenario && r.nodes === row.nodes && r.mode === 'exact') as Row;
    console.log(
      `| ${row.nodes} | ${row.mode} | ${fmt(row.decisionsPerSecond)} | ` +
        `${(row.decisionsPerSecond / exact.decisionsPerSecond).toFixed(1)}x | ` +
        `${row.commandsPerDecision.toFixed(5)} | ${(100 * row.admittedOfLimit).toFixed(1)}% |`,
    );
  }
}
console.log(
  `\nmany keys, one process, 128 in flight (medians of ${KEY_ROUNDS} interleaved rounds):\n` +
    '| workload | mode | decisions/s | leased / exact | client commands / decision | Redis commands / decision |\n' +
    '| --- | --- | ---: | ---: | ---: | ---: |',
);
for (const row of keyRows) {
  const exact = keyRows.find((r) => r.workload === row.workload && r.mode === 'exact') as KeyRow;
  console.log(
    `| ${row.workload} | ${row.mode} | ${fmt(row.decisionsPerSecond)} | ` +
      `${(row.decisionsPerSecond / exact.decisionsPerSecond).toFixed(2)}x | ` +
      `${row.clientCommandsPerDecision.toFixed(4)} | ${row.redisCommandsPerDecision.toFixed(4)} |`,
  );
}
writeJson(fileURLToPath(new URL('../results/hybrid.json', import.meta.url)), {
  seconds: SECONDS,
  scenarios: SCENARIOS,
  rows,
  timelines,
  keyRounds: KEY_ROUNDS,
  keyRows,
});
redis.disconnect();
await server.stop();
