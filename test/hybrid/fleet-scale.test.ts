/**
 * Hybrid modes at fleet scale, in one process against a real redis-server: 256 nodes (each a store of its
 * own, sharing 4 clients) under skewed Poisson demand above the limit (16 nodes at 150/s, 240 at 10/s: 4,800/s
 * against a limit of 4,000/s). Divided mode must use the limit (every steady second near it) without passing
 * C + R*T over any interval; leased mode must keep its bound and use the limit too. The figures print as
 * tables; the full sweep (8 to 1,000 nodes, exact, leased and divided, more scenarios) is the fleet bench
 * (`npm run bench:fleet`).
 */
import { tokenBucket } from '@sluice/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FleetMode, type FleetRun, simulateFleet } from '../harness/fleet-sim.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';
import { bucketIntervalsOver } from '../redis/over-admission.js';

const NODES = 256;
const LIMIT = 4_000;
const SECONDS = 9;
/** Start-up: the founder's burst, then 3 divisions at 500 ms (see the README's divided mode). */
const STEADY_FROM = 3;
const rule = tokenBucket({ capacity: LIMIT, refillPerSecond: LIMIT });
/**
 * A grant's time is when its answer arrived here: a draw or a lease decided in Redis may be heard tens of ms
 * later on a loaded machine, so 20 ms of the rate is allowed for that in the bound checks.
 */
const SLACK = LIMIT / 50;
const plans = Array.from({ length: NODES }, (_, i) => ({ rate: () => (i < 16 ? 150 : 10) }));

let server: TestRedis;
let clients: Redis[];
beforeAll(async () => {
  server = await spawnRedisServer();
  clients = Array.from({ length: 4 }, () => new Redis(server.url));
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server.stop();
});

async function run(mode: FleetMode): Promise<FleetRun> {
  return simulateFleet({
    mode,
    plans,
    rule,
    durationMs: SECONDS * 1_000,
    clients,
    heartbeatMs: 500,
    recordTimes: true,
    seed: 7,
  });
}

/** The run's seconds as a table: admitted against the limit, and where grants came from. */
function report(mode: FleetMode, r: FleetRun): void {
  console.table(
    r.admittedPerSecond.map((admitted, s) => ({
      mode,
      second: s + 1,
      offered: r.offeredPerSecond[s],
      admitted,
      'of the limit %': Number(((100 * admitted) / LIMIT).toFixed(1)),
      ...Object.fromEntries(Object.entries(r.grantsBySource).map(([source, counts]) => [source, counts[s]])),
    })),
  );
  console.table([
    {
      mode,
      decisions: r.decisions,
      'store-error events': r.storeErrors,
      'fail-mode grants': r.fallbackGrants,
      'deadlines extended (this process late)': r.deadlinesExtended,
      'deadlines missed': r.deadlinesMissed,
      'worst tick lag ms': Number(r.worstTickLagMs.toFixed(1)),
    },
  ]);
}

describe(`${NODES} nodes, skewed Poisson demand at 1.2 x the limit`, () => {
  it('divided: every steady second uses at least 90% of the limit (95% on average), never over C + R*T', async () => {
    const r = await run('divided');
    report('divided', r);
    const steady = r.admittedPerSecond.slice(STEADY_FROM, SECONDS - 1);
    const mean = steady.reduce((a, b) => a + b, 0) / steady.length;
    // The last second is cut short by the end of the run; the bench holds the figures of a quiet machine.
    expect(mean).toBeGreaterThanOrEqual(0.95 * LIMIT);
    for (const admitted of steady) expect(admitted).toBeGreaterThanOrEqual(0.9 * LIMIT);
    expect(bucketIntervalsOver(r.grantTimes, LIMIT + SLACK, LIMIT / 1_000).over).toBe(0);
    expect(r.fallbackGrants).toBe(0);
  });

  it('leased: never over C + R*T plus what the nodes hold; at least 90% of the limit every steady second', async () => {
    const r = await run('leased');
    report('leased', r);
    const steady = r.admittedPerSecond.slice(1, SECONDS - 1);
    for (const admitted of steady) expect(admitted).toBeGreaterThanOrEqual(0.9 * LIMIT);
    // A lease is at most burst / (4 x live lessees): the fleet holds at most a quarter of the burst at once.
    expect(bucketIntervalsOver(r.grantTimes, LIMIT * 1.25 + SLACK, LIMIT / 1_000).over).toBe(0);
    // Decided on Redis: the fail mode grants at most a sliver. 256 nodes' first leases all leave in the first
    // instant, and on 2 busy cores a few of them can miss their deadline (a CI run: 8 missed, 18 fail-mode
    // grants of 43,258, all in the first second); the bound above holds either way.
    expect(r.fallbackGrants).toBeLessThanOrEqual(0.01 * r.grantTimes.length);
  });
});
