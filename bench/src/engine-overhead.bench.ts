/**
 * What the engine contract costs the modes that moved onto it, against the Redis scripts they called before,
 * in one run against one spawned redis-server, medians of interleaved rounds:
 * - a lease (leased mode's, a reserve's draw): `engine.lease` (core's input checks, then lease.lua) against
 *   lease.lua called directly, 128 in flight over 1,000 keys;
 * - a divided store's heartbeat of 16 limiters: 16 `engine.heartbeat` calls asked together (redisEngine carries
 *   them in one membership.lua call) against one membership.lua call of 16 limiters, and the script calls each
 *   round costs Redis.
 * Writes bench/results/engine-overhead.json.
 *
 * Run: pnpm --filter @sluice/bench bench:engine-overhead (BENCH_ROUNDS=n for more rounds)
 */
import { fileURLToPath } from 'node:url';
import { tokenBucket } from '@sluice/core';
import type { Engine, Heartbeat } from '@sluice/core/engine';
import { stateName } from '@sluice/core/internal';
import { engineOnConnection, ruleArgs, runHeartbeat, runLease, toConnection } from '@sluice/redis/internal';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, scriptCalls, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const LEASES = 4_000;
const IN_FLIGHT = 128;
const KEYS = 1_000;
const FLEETS = 16;
const BEATS = 200;

const server = await spawnRedisServer();
const redis = new Redis(server.url);
const connection = toConnection(redis);
const engine: Engine = engineOnConnection(connection, undefined);
const rule = tokenBucket({ name: 'tb', capacity: 1_000_000_000, refillPerSecond: 1_000_000_000 });
const state = `lease~${stateName(rule)}`;
const rules = { prefix: 'bench-lease', rules: [rule], states: [state] };
const args = ruleArgs([rule]);

/** `count` calls of `call`, IN_FLIGHT at a time; the seconds it took. */
async function timed(count: number, call: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) await call(next++);
    }),
  );
  return (performance.now() - started) / 1_000;
}

const viaEngine = (i: number) =>
  engine.lease(
    rules,
    { key: `k${i % KEYS}`, want: 10, node: 'n1', liveMs: 3_000, hoardingDivisor: 4, register: i % 3 === 0 },
    undefined,
  );
const direct = (i: number) =>
  runLease(connection, {
    stateKey: `bench-lease:{k${i % KEYS}}:${state}`,
    lesseesKey: `bench-lease:{k${i % KEYS}}:lessees~${state}`,
    kind: rule.kind,
    ruleArgs: args,
    burst: rule.burst,
    want: 10,
    nodeId: 'n1',
    liveMs: 3_000,
    nowMs: undefined,
    hoardingDivisor: 4,
    register: i % 3 === 0,
    version: undefined,
  });

const beat = (fleet: string): Heartbeat => ({
  prefix: 'bench-beat',
  fleet,
  node: 'n1',
  leaving: false,
  liveMs: 3_000,
  intervalMs: 1_000,
  limit: 1_000,
  burst: 1_000,
  demand: 100,
  division: 'demand',
  divided: 0.7,
  windowed: false,
  minLocal: 1,
  lastAt: undefined,
  knownNodes: 1,
  assumedNodes: 1,
  version: 1,
});
const fleets = Array.from({ length: FLEETS }, (_, i) => `f${i}`);
const beatsViaEngine = () => Promise.all(fleets.map((fleet) => engine.heartbeat(beat(fleet), undefined)));
const beatsDirect = () =>
  runHeartbeat(connection, {
    nodeId: 'n2',
    liveMs: 3_000,
    intervalMs: 1_000,
    nowMs: undefined,
    leaving: false,
    limiters: fleets.map((fleet) => ({
      prefix: 'bench-beat2',
      rule: fleet,
      limitPerSecond: 1_000,
      demand: 100,
      mode: 'demand' as const,
      burst: 1_000,
      windowed: false,
      divided: 0.7,
      leastHeld: 1,
      lastSeen: '',
      knownNodes: 1,
      assumedNodes: 1,
      version: 1,
    })),
  });

/** Rounds of `beats`, one after another; the seconds and the script calls they cost. */
async function beatRounds(beats: () => Promise<unknown>): Promise<{ seconds: number; callsPerRound: number }> {
  const before = await scriptCalls(redis);
  const started = performance.now();
  for (let i = 0; i < BEATS; i++) await beats();
  const seconds = (performance.now() - started) / 1_000;
  return { seconds, callsPerRound: ((await scriptCalls(redis)) - before) / BEATS };
}

// Warm-up: the scripts loaded (and their function libraries), the JIT past its first tiers.
await timed(LEASES, viaEngine);
await timed(LEASES, direct);
await beatRounds(beatsViaEngine);
await beatRounds(beatsDirect);

const leaseRatios: number[] = [];
const leaseRates = { engine: [] as number[], direct: [] as number[] };
const beatRatios: number[] = [];
const beatCalls = { engine: [] as number[], direct: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  const a = await timed(LEASES, viaEngine);
  const b = await timed(LEASES, direct);
  leaseRatios.push(a / b);
  leaseRates.engine.push(LEASES / a);
  leaseRates.direct.push(LEASES / b);
  const x = await beatRounds(beatsViaEngine);
  const y = await beatRounds(beatsDirect);
  beatRatios.push(x.seconds / y.seconds);
  beatCalls.engine.push(x.callsPerRound);
  beatCalls.direct.push(y.callsPerRound);
}

const results = {
  rounds: ROUNDS,
  lease: {
    what: `${LEASES} leases, ${IN_FLIGHT} in flight over ${KEYS} keys: engine.lease vs lease.lua called directly`,
    leasesPerSecond: { engine: Math.round(median(leaseRates.engine)), direct: Math.round(median(leaseRates.direct)) },
    timeRatio: Number(median(leaseRatios).toFixed(3)),
  },
  heartbeat: {
    what: `${BEATS} rounds of ${FLEETS} divided limiters' heartbeats: ${FLEETS} engine.heartbeat calls asked together vs one membership.lua call of ${FLEETS}`,
    scriptCallsPerRound: { engine: median(beatCalls.engine), direct: median(beatCalls.direct) },
    timeRatio: Number(median(beatRatios).toFixed(3)),
  },
};
console.log(JSON.stringify(results, null, 2));
writeJson(fileURLToPath(new URL('../results/engine-overhead.json', import.meta.url)), results);
redis.disconnect();
await server.stop();
