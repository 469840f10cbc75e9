/**
 * The fleet simulator: N nodes (8, 64, 256, 1,000), each a store of its own sharing 4 Redis clients in this
 * process (test/harness/fleet-sim.ts), against a throwaway redis-server, in exact, leased and divided mode, one
 * token bucket of 4,000 per second (capacity 4,000) offered 1.2 x that as Poisson arrivals: evenly, skewed
 * (Zipf over the nodes), over Zipf-skewed keys (1,000 keys, each with the rule of its own: the hot key near
 * 640 per second, most keys a few; the cost of many keys, every mode admitting what is offered), in bursts (every node 2.5 x its rate one second in three, a quarter of it the other
 * two: the same mean), with a quarter of the nodes killed without closing at 4 s (their heartbeats and leases
 * just stop; the others take up their traffic), and in a rolling deploy (at 256 nodes: every node replaced in
 * waves of a quarter, each new one starting half a second after the one it replaces stopped). Each run has a server of its own; Redis's
 * own accounting (INFO cpu, commandstats, stats) gives its cost. Reports per run: Redis CPU per second and per
 * decision, script calls and bytes per decision, utilisation of the ideal (the limit, or what was offered if
 * less) in each steady second, the worst second over the limit, when it converged, this process's CPU per
 * decision, store-error events and deadlines. The per-node traffic is scaled down with N to what one process on
 * this machine can offer (4,800 per second in all): at 1,000 nodes a node sees about 5 requests per second,
 * the regime where divided mode's shares are too small to hold and its reserve serves most requests.
 *
 *   node --conditions=sluice-source --import tsx bench/src/fleet.bench.ts   (npm run bench:fleet)
 *   FLEET_NODES=64,256 FLEET_SECONDS=8 ...                                   (a smaller sweep)
 *   FLEET_TARGET=cluster ...   (on a 3-master Cluster: Redis's cost summed over its masters; fleet-cluster.json)
 *   FLEET_NODES=1000 FLEET_SCENARIOS=even FLEET_MODES=exact,leased FLEET_ROUNDS=3 ...
 *     (one comparison in interleaved rounds: each row is the round of median Redis CPU per decision, with
 *     every round's figure beside it; the JSON goes to fleet-rounds.json, leaving the full sweep's alone)
 */
import { fileURLToPath } from 'node:url';
import { tokenBucket } from '@sluice/core';
import { type Cluster, Redis } from 'ioredis';
import { type FleetMode, type NodePlan, simulateFleet } from '../../test/harness/fleet-sim.js';
import { startTestCluster } from '../../test/harness/redis-cluster.js';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { overBound, redisCpuUs, scriptCalls, writeJson } from './harness.js';

const SIZES = (process.env.FLEET_NODES ?? '8,64,256,1000').split(',').map(Number);
const MODES = (process.env.FLEET_MODES ?? 'exact,leased,divided').split(',') as FleetMode[];
const SCENARIOS = (process.env.FLEET_SCENARIOS ?? 'even,skewed,zipf keys,bursts,killed,rolling deploy').split(
  ',',
) as Scenario[];
const ROUNDS = Number(process.env.FLEET_ROUNDS ?? 1);
/** 'server': one redis-server; 'cluster': a 3-master Cluster (the limiter's keys in their slots, the sets in theirs). */
const TARGET = (process.env.FLEET_TARGET ?? 'server') as 'server' | 'cluster';
const SECONDS = Number(process.env.FLEET_SECONDS ?? 10);
/** Seconds before this are start-up (divided: a founder, then three divisions at 1 s). */
const STEADY_FROM = 5;
const LIMIT = 4_000;
const OFFERED = 1.2 * LIMIT;

export type Scenario = 'even' | 'skewed' | 'zipf keys' | 'bursts' | 'killed' | 'rolling deploy';

/** The keys of the 'zipf keys' scenario. */
const KEYS = 1_000;

/** When the 'killed' scenario kills its quarter of the nodes, in ms. */
const KILLED_AT_MS = 4_000;

export interface FleetRow {
  readonly scenario: Scenario;
  readonly mode: FleetMode;
  readonly nodes: number;
  /** redis-server CPU over the run, as a share of one core. */
  readonly redisCpuShare: number;
  readonly redisUsPerDecision: number;
  readonly scriptCallsPerDecision: number;
  /** Bytes in and out of Redis per decision. */
  readonly bytesPerDecision: number;
  /** Admitted against the ideal (the limit, or what was offered if less), in the steady seconds. */
  readonly utilisationMean: number;
  readonly utilisationMin: number;
  /** The most any steady second admitted past the limit, as a share of it (0: never over; undefined: many keys). */
  readonly worstOver: number | undefined;
  /**
   * The most any run of whole seconds admitted past the bucket's bound, capacity + rate x its length (0: never
   * over); second 0 (the fleet's nodes starting) left out. Undefined with many keys (each has its own bound).
   */
  readonly overBound: number | undefined;
  /** The first second from which every steady second used at least 95% of the ideal (undefined: never). */
  readonly convergedAtSecond: number | undefined;
  readonly clientUsPerDecision: number;
  readonly storeErrors: number;
  readonly deadlinesMissed: number;
  /** Admitted per second, the whole run. */
  readonly admittedPerSecond: readonly number[];
  /** With FLEET_ROUNDS > 1: every round's Redis CPU per decision (this row is the median one's round). */
  readonly redisUsPerDecisionRounds?: readonly number[];
}

/** Zipf weights (s = 1) over n items, summing to 1. */
function zipf(n: number): number[] {
  const raw = Array.from({ length: n }, (_, i) => 1 / (i + 1));
  const total = raw.reduce((a, b) => a + b, 0);
  return raw.map((w) => w / total);
}

/** A key drawn from KEYS keys by Zipf popularity (the fleet's seeded random). */
function zipfKey(): (node: number, random: () => number) => string {
  const cumulative: number[] = [];
  let sum = 0;
  for (const w of zipf(KEYS)) cumulative.push((sum += w));
  return (_, random) => {
    const u = random();
    let lo = 0;
    let hi = KEYS - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return `k${lo}`;
  };
}

function plans(scenario: Scenario, nodes: number): NodePlan[] {
  if (scenario === 'skewed') return zipf(nodes).map((w) => ({ rate: () => OFFERED * w }));
  const even = { rate: () => OFFERED / nodes };
  if (scenario === 'even' || scenario === 'zipf keys') return Array.from({ length: nodes }, () => even);
  if (scenario === 'bursts') {
    const bursting = { rate: (ms: number) => (OFFERED / nodes) * (Math.floor(ms / 1_000) % 3 === 0 ? 2.5 : 0.25) };
    return Array.from({ length: nodes }, () => bursting);
  }
  if (scenario === 'killed') {
    // The survivors take up the killed nodes' traffic: the fleet is offered the same.
    const killed = Math.floor(nodes / 4);
    const surviving = { rate: (ms: number) => OFFERED / (ms < KILLED_AT_MS ? nodes : nodes - killed) };
    return Array.from({ length: nodes }, (_, i) =>
      i < killed ? { ...even, stopMs: KILLED_AT_MS, killed: true } : surviving,
    );
  }
  // Four waves from 3 s: each node stops, its replacement starts 500 ms later (a new id, as a new pod).
  const wave = (i: number) => 3_000 + (i % 4) * 1_500;
  return [
    ...Array.from({ length: nodes }, (_, i) => ({ ...even, stopMs: wave(i) })),
    ...Array.from({ length: nodes }, (_, i) => ({ ...even, startMs: wave(i) + 500 })),
  ];
}

async function netBytes(redis: Redis): Promise<number> {
  const info = await redis.info('stats');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return field('total_net_input_bytes') + field('total_net_output_bytes');
}

/** The Redis a run decides on: a server of its own, or (FLEET_TARGET=cluster) a 3-master Cluster of its own. */
interface Target {
  readonly clients: readonly (Redis | Cluster)[];
  /** A client of its own, for a node that will be killed (its connection dropped as a dead process's). */
  ownClient(): Redis | Cluster;
  /** Every server's own connection: Redis's cost is the sum of theirs. */
  readonly admins: readonly Redis[];
  stop(): Promise<void>;
}

async function target(): Promise<Target> {
  const { client, servers, stopServers } =
    TARGET === 'cluster'
      ? await startTestCluster({ replicas: 0 }).then((cluster) => ({
          client: (): Redis | Cluster => cluster.client(),
          servers: cluster.nodes,
          stopServers: () => cluster.stop(),
        }))
      : await spawnRedisServer().then((server) => ({
          client: (): Redis | Cluster => new Redis(server.url),
          servers: [server],
          stopServers: () => server.stop(),
        }));
  const clients = Array.from({ length: 4 }, () => client());
  const own: (Redis | Cluster)[] = [];
  const admins = servers.map((server) => new Redis(server.url));
  return {
    clients,
    ownClient() {
      const c = client();
      own.push(c);
      return c;
    },
    admins,
    async stop() {
      for (const c of [...clients, ...own, ...admins]) c.disconnect();
      await stopServers();
    },
  };
}

/** The sum of `read` over every server. */
async function summed(admins: readonly Redis[], read: (admin: Redis) => Promise<number>): Promise<number> {
  return (await Promise.all(admins.map(read))).reduce((a, b) => a + b, 0);
}

async function run(scenario: Scenario, mode: FleetMode, nodes: number): Promise<FleetRow> {
  const { clients, ownClient, admins, stop } = await target();
  const cost = async () =>
    [await summed(admins, redisCpuUs), await summed(admins, scriptCalls), await summed(admins, netBytes)] as const;
  try {
    const [cpu0, calls0, bytes0] = await cost();
    const r = await simulateFleet({
      mode,
      plans: plans(scenario, nodes),
      ...(scenario === 'zipf keys' ? { key: zipfKey() } : {}),
      rule: tokenBucket({ capacity: LIMIT, refillPerSecond: LIMIT }),
      durationMs: SECONDS * 1_000,
      clients: clients as Redis[],
      ownClient: ownClient as () => Redis,
      seed: nodes,
    });
    const [cpu1, calls1, bytes1] = await cost();
    const [cpu, calls, bytes] = [cpu1 - cpu0, calls1 - calls0, bytes1 - bytes0];
    // What one exact bucket per key would admit of what was offered: the limit on one hot key; with many keys,
    // none of which reaches its limit, everything.
    const oneKey = scenario !== 'zipf keys';
    const ideal = (offered: number | undefined) => (oneKey ? Math.min(LIMIT, offered ?? LIMIT) : (offered ?? 0));
    const steady = r.admittedPerSecond.slice(STEADY_FROM, SECONDS - 1).map((admitted, s) => ({
      admitted,
      ideal: ideal(r.offeredPerSecond[STEADY_FROM + s]),
    }));
    const utilisation = steady.map((s) => s.admitted / s.ideal);
    const converged = r.admittedPerSecond.findIndex((_, from) =>
      r.admittedPerSecond.slice(from, SECONDS - 1).every((a, k) => a >= 0.95 * ideal(r.offeredPerSecond[from + k])),
    );
    const round = (x: number, digits = 2) => Number(x.toFixed(digits));
    return {
      scenario,
      mode,
      nodes,
      redisCpuShare: round(cpu / (SECONDS * 1e6), 4),
      redisUsPerDecision: round(cpu / r.decisions),
      scriptCallsPerDecision: round(calls / r.decisions, 3),
      bytesPerDecision: round(bytes / r.decisions, 1),
      utilisationMean: round(utilisation.reduce((a, b) => a + b, 0) / utilisation.length, 4),
      utilisationMin: round(Math.min(...utilisation), 4),
      worstOver: oneKey ? round(Math.max(0, ...steady.map((s) => s.admitted / LIMIT - 1)), 4) : undefined,
      overBound: oneKey ? overBound(r.admittedPerSecond.slice(1), LIMIT, LIMIT) : undefined,
      convergedAtSecond: converged < 0 || converged >= SECONDS - 1 ? undefined : converged + 1,
      clientUsPerDecision: round(r.clientUsPerDecision, 1),
      storeErrors: r.storeErrors,
      deadlinesMissed: r.deadlinesMissed,
      admittedPerSecond: r.admittedPerSecond,
    };
  } finally {
    await stop();
  }
}

/** The round of median Redis CPU per decision, with every round's figure. */
function medianRound(rounds: readonly FleetRow[]): FleetRow {
  const sorted = [...rounds].sort((a, b) => a.redisUsPerDecision - b.redisUsPerDecision);
  const median = sorted[Math.floor((sorted.length - 1) / 2)] as FleetRow;
  return rounds.length === 1
    ? median
    : { ...median, redisUsPerDecisionRounds: rounds.map((r) => r.redisUsPerDecision) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows: FleetRow[] = [];
  const jobs: [Scenario, number][] = [
    ...SIZES.flatMap((n) => SCENARIOS.filter((s) => s !== 'rolling deploy').map((s) => [s, n] as [Scenario, number])),
    ...(SIZES.includes(256) && SCENARIOS.includes('rolling deploy')
      ? [['rolling deploy', 256] as [Scenario, number]]
      : []),
  ];
  for (const [scenario, nodes] of jobs) {
    // Modes interleaved round by round, so a drift of the machine falls on every mode alike.
    const rounds = new Map<FleetMode, FleetRow[]>(MODES.map((mode) => [mode, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        const row = await run(scenario, mode, nodes);
        rounds.get(mode)?.push(row);
        const { admittedPerSecond: _, ...shown } = row;
        console.log(JSON.stringify(shown));
      }
    }
    for (const mode of MODES) rows.push(medianRound(rounds.get(mode) ?? []));
  }
  console.table(rows.map(({ admittedPerSecond: _, ...shown }) => shown));
  const file = TARGET === 'cluster' ? 'fleet-cluster.json' : ROUNDS > 1 ? 'fleet-rounds.json' : 'fleet.json';
  writeJson(fileURLToPath(new URL(`../results/${file}`, import.meta.url)), {
    limitPerSecond: LIMIT,
    offeredPerSecond: OFFERED,
    seconds: SECONDS,
    steadyFrom: STEADY_FROM,
    rounds: ROUNDS,
    rows,
  });
}
