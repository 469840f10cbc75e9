/**
 * Hybrid modes with real processes and a real redis-server: leased never over its bound (N = 2, 4, 8), a
 * dead lessee strands at most one batch, divided mode's shares under even and skewed load and after a
 * node dies. Figures are printed as tables.
 */
import { type FleetResult, perSecond, runFleet } from '@sluice/example-multi-node/fleet';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { bucketIntervalsOver } from '../redis/over-admission.js';

const redis = useTestRedis();
const CAPACITY = 1_000;
const RATE = 1_000; // per second
const SECONDS = 10;
const bucket = { kind: 'tokenBucket', capacity: CAPACITY, refillPerSecond: RATE } as const;

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const allTimes = (r: FleetResult) => r.nodes.flatMap((n) => n.times).sort((a, b) => a - b);

describe('leased mode', () => {
  const rows: Record<string, string | number>[] = [];
  it.each([2, 4, 8])('N = %i saturating nodes never exceed C + R*T + N*B in any interval', async (nodes) => {
    const biggest: number[] = new Array(nodes).fill(0);
    const result = await runFleet({
      nodes,
      mode: 'leased',
      redisUrl: redis().server.url,
      rule: bucket,
      durationMs: SECONDS * 1_000,
      recordTimes: true,
      onReport: (node, report) => {
        if (report.type === 'lease') biggest[node] = Math.max(biggest[node] as number, report.held);
      },
    });
    const times = allTimes(result);
    // B: the largest batch each node held; the bound allows every node one batch on top of the bucket's.
    const heldAtOnce = sum(biggest);
    const { over, worst } = bucketIntervalsOver(times, CAPACITY + heldAtOnce, RATE / 1_000);
    const allowed = CAPACITY + RATE * SECONDS;
    rows.push({
      N: nodes,
      admitted: times.length,
      'of C + R*T': allowed,
      'admitted %': Number(((100 * times.length) / allowed).toFixed(2)),
      'N*B (sum of largest batches)': heldAtOnce,
      'worst excess over C + R*T': Number((worst + heldAtOnce).toFixed(1)),
      'intervals over C + R*T + N*B': over,
      decisions: sum(result.nodes.map((n) => n.decisions)),
    });
    console.table(rows);
    expect(over).toBe(0);
    // Leasing strands nothing: what each node took from Redis it admitted, but for the one batch it may hold
    // unspent when the run stops (the exact check for a stranding or hoarding fault).
    for (const [i, node] of result.nodes.entries()) {
      expect(node.leased - node.admitted, `node ${i}`).toBeGreaterThanOrEqual(0);
      expect(node.leased - node.admitted, `node ${i}`).toBeLessThanOrEqual(biggest[i] as number);
    }
    // Utilisation depends on how fast this machine lets N processes come back for leases (a bucket idle at C
    // loses its refill): 8 processes on this 2-core box measured 78.9-86% of C + R*T in one afternoon, 61% under
    // a loaded CI run, 2 and 4 over 99%. The printed table and the hybrid bench hold the real figure; here it
    // only has to show leasing keeps the fleet fed.
    expect(times.length).toBeGreaterThanOrEqual(0.5 * allowed);
  });

  it('a lessee killed with SIGKILL mid-run: the fleet stays within its bound and loses at most that node’s batch', async () => {
    const biggest = [0, 0, 0, 0];
    const result = await runFleet({
      nodes: 4,
      mode: 'leased',
      redisUrl: redis().server.url,
      rule: bucket,
      durationMs: SECONDS * 1_000,
      recordTimes: true,
      kill: { node: 0, afterMs: 4_000 },
      onReport: (node, report) => {
        if (report.type === 'lease') biggest[node] = Math.max(biggest[node] as number, report.held);
      },
    });
    const dead = result.nodes[0];
    expect(dead?.killed).toBe(true);
    const times = allTimes(result);
    const { over } = bucketIntervalsOver(times, CAPACITY + sum(biggest), RATE / 1_000);
    // What it leased and was never seen spending (its last reports may be lost with it: counted as stranded).
    const stranded = (dead?.leased ?? 0) - (dead?.admitted ?? 0);
    console.table([
      {
        admitted: times.length,
        'dead node leased': dead?.leased,
        'dead node admitted': dead?.admitted,
        stranded,
        'the most it held': biggest[0],
        'intervals over bound': over,
      },
    ]);
    expect(over).toBe(0);
    expect(stranded).toBeGreaterThanOrEqual(0);
    // At most one batch, plus what it admitted after its last report (it reports every 20 ms; a loaded CI box
    // stretched that to tens of ms, 12 admissions over the batch): 100 ms of its own rate.
    const unreported = Math.ceil(((dead?.admitted ?? 0) / 4_000) * 100);
    expect(stranded).toBeLessThanOrEqual((biggest[0] as number) + unreported);
  });
});

describe('divided mode', () => {
  const HEARTBEAT = 500;
  // Each process records a grant when it hears it, a Redis round trip after a reserve draw was decided: the
  // fleet's start-up spends the whole bucket at once (the founder's share and the reserve), so 10 ms of the rate
  // is allowed for that skew in the recorded times.
  const RECORDING_SLACK = RATE / 100;

  it('even load on 4 nodes: never over C + R*T; after start-up (3 divisions) every two seconds within 5% of the limit', async () => {
    const seconds = 6;
    const result = await runFleet({
      nodes: 4,
      mode: 'divided',
      redisUrl: redis().server.url,
      rule: bucket,
      durationMs: seconds * 1_000,
      heartbeatMs: HEARTBEAT,
      recordTimes: true,
    });
    const counts = perSecond(result, seconds);
    console.table(
      counts.map((admitted, s) => ({
        second: s + 1,
        admitted,
        limit: s === 0 ? 'R + C (burst)' : RATE,
        'off by %': s === 0 ? '' : (((admitted - RATE) / RATE) * 100).toFixed(1),
      })),
    );
    // Seconds 1-2 hold the start-up: the founder holds the whole share and spends the burst, the others hold
    // theirs from the third division (the second takes the founder's back: little is admitted for a
    // heartbeat); from second 3 on, the rate, give or take the reserve's batches (30% of it is drawn from Redis).
    // Counted over each two adjacent seconds: a node process late by tens of ms on a loaded machine moves grants
    // from one second into the next, and the bucket carries what one second left unspent (a CI run saw 948 then
    // 1,050).
    const steady = counts.slice(2);
    for (let s = 1; s < steady.length; s++) {
      const pair = (steady[s - 1] as number) + (steady[s] as number);
      expect(Math.abs(pair - 2 * RATE)).toBeLessThanOrEqual(0.05 * 2 * RATE);
    }
    expect(bucketIntervalsOver(allTimes(result), CAPACITY + RECORDING_SLACK, RATE / 1_000).over).toBe(0);
  });

  it("80/10/5/5 skew: never over the limit; 'demand' uses more of it than 'equal' (the figures are printed)", async () => {
    const seconds = 8;
    // 1.25 x the limit offered in all: 1,000, 125, 62.5 and 62.5 per second.
    const offered = [0.8, 0.1, 0.05, 0.05].map((f) => f * 1.25 * RATE);
    const used: Record<string, number> = {};
    for (const share of ['equal', 'demand'] as const) {
      const result = await runFleet({
        nodes: 4,
        mode: 'divided',
        redisUrl: redis().server.url,
        rule: bucket,
        durationMs: seconds * 1_000,
        heartbeatMs: HEARTBEAT,
        recordTimes: true,
        offeredPerSecond: offered,
        share,
      });
      // After convergence (2 s), the share of the limit actually used per second.
      const counts = perSecond(result, seconds).slice(2);
      used[share] = sum(counts) / (counts.length * RATE);
    }
    console.table([
      {
        offered: '1000 / 125 / 62.5 / 62.5 per s',
        'equal: used of limit': `${(100 * (used.equal as number)).toFixed(1)}%`,
        'demand: used of limit': `${(100 * (used.demand as number)).toFixed(1)}%`,
      },
    ]);
    // Safety is the test's: neither split admits over the limit (5% for a heartbeat's lag). How much of the
    // limit a split uses depends on the machine's pace; the printed table and the hybrid bench hold that figure.
    expect(used.demand).toBeLessThanOrEqual(1.05);
    expect(used.equal).toBeLessThanOrEqual(1.05);
    expect(used.demand).toBeGreaterThan(used.equal as number);
  });

  it('a node killed with SIGKILL: the others re-converge to the full limit within 2 heartbeats of it being declared dead', async () => {
    const seconds = 10;
    const killAt = 3_000;
    const result = await runFleet({
      nodes: 4,
      mode: 'divided',
      redisUrl: redis().server.url,
      rule: bucket,
      durationMs: seconds * 1_000,
      heartbeatMs: HEARTBEAT,
      recordTimes: true,
      kill: { node: 0, afterMs: killAt },
    });
    const times = allTimes(result).map((t) => t - result.startAt);
    // Declared dead 3 heartbeats after its last one (at most killAt + 3 x H), divided for by the next division
    // and held by the others from the one after (a share grows only once every node has seen it shrink).
    const convergedBy = killAt + 3 * HEARTBEAT + HEARTBEAT + 2 * HEARTBEAT;
    const windows: { from: number; admitted: number }[] = [];
    for (let from = killAt; from + 1_000 <= seconds * 1_000; from += 250) {
      windows.push({ from, admitted: times.filter((t) => t >= from && t < from + 1_000).length });
    }
    // Recovered: every window from then on admits at least 90% of the rate (the reserve's draws come in
    // batches, so a window may see a batch more or less), and they average at least 97%. Over-admission is the
    // bucket's bound (C + R*T over any interval), checked on its own: a bucket may burst what an idle moment saved.
    const recovered = windows.find((w) => {
      const after = windows.filter((x) => x.from >= w.from);
      const mean = after.reduce((a, x) => a + x.admitted, 0) / after.length;
      return w.from >= killAt && mean >= 0.97 * RATE && after.every((x) => x.admitted >= 0.9 * RATE);
    });
    const { over } = bucketIntervalsOver(
      times.map((t) => t + result.startAt),
      CAPACITY + RECORDING_SLACK,
      RATE / 1_000,
    );

    console.table([
      {
        'killed at': `${killAt} ms`,
        'full limit again from': recovered ? `${recovered.from} ms` : 'never',
        'required by': `${convergedBy} ms`,
        'rate just after kill': windows[0]?.admitted,
        'intervals over C + R*T': over,
      },
    ]);
    expect(over).toBe(0);
    expect(recovered).toBeDefined();
    expect(recovered?.from).toBeLessThanOrEqual(convergedBy);
  });
});
