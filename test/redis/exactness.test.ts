import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCluster, type TestCluster } from '../harness/redis-cluster.js';
import { startTestRedis, type TestRedis } from '../harness/redis-server.js';
import { alignedWindowsOver, bucketIntervalsOver, slidingWindowsOver } from './over-admission.js';

const child = fileURLToPath(new URL('./exactness-child.ts', import.meta.url));
const PROCESSES = 4;
const IN_FLIGHT = 200;
const DURATION_MS = 5_000;

interface ChildResult {
  grants: Record<string, number[]>;
  decisions: number;
  fallbacks: number;
}

/** Runs PROCESSES children against one Redis (or Cluster) and merges their grant times per prefix. */
export async function runFleet(
  env: Record<string, string>,
  algorithms: string[],
): Promise<{ grants: Map<string, number[]>; decisions: number; fallbacks: number }> {
  const startAt = Date.now() + 4_000;
  const prefix = `exact${Date.now()}`;
  const results = await Promise.all(
    Array.from(
      { length: PROCESSES },
      () =>
        new Promise<ChildResult>((resolve, reject) => {
          const p = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', child], {
            env: {
              ...process.env,
              ...env,
              PREFIX: prefix,
              START_AT: String(startAt),
              DURATION_MS: String(DURATION_MS),
              IN_FLIGHT: String(IN_FLIGHT),
              ALGORITHMS: algorithms.join(','),
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let out = '';
          let err = '';
          p.stdout.on('data', (d: Buffer) => (out += d));
          p.stderr.on('data', (d: Buffer) => (err += d));
          p.on('exit', (code) => {
            const line = out.split('\n').find((l) => l.startsWith('SLUICE-RESULT '));
            try {
              if (code !== 0 || line === undefined) throw new Error('no result line');
              resolve(JSON.parse(line.slice('SLUICE-RESULT '.length)) as ChildResult);
            } catch (error) {
              reject(new Error(`child exited ${code} (${String(error)}): ${err}${out.slice(-2_000)}`));
            }
          });
        }),
    ),
  );
  const grants = new Map<string, number[]>();
  for (const r of results) {
    for (const [p, times] of Object.entries(r.grants))
      grants.set(p.slice(prefix.length + 1), [...(grants.get(p.slice(prefix.length + 1)) ?? []), ...times]);
  }
  for (const times of grants.values()) times.sort((a, b) => a - b);
  return {
    grants,
    decisions: results.reduce((s, r) => s + r.decisions, 0),
    fallbacks: results.reduce((s, r) => s + r.fallbacks, 0),
  };
}

/** Checks every algorithm's bound over the fleet's grants; prints a table; returns the over-admissions. */
export function checkBounds(grants: Map<string, number[]>, label: string): number {
  const rows: Array<Record<string, string | number>> = [];
  let total = 0;
  const add = (name: string, bound: string, r: { over: number; worst: number }) => {
    const n = grants.get(name)?.length ?? 0;
    rows.push({ algorithm: name, admitted: n, bound, worst: Number(r.worst.toFixed(3)), overAdmissions: r.over });
    total += r.over;
  };
  const t = (name: string) => grants.get(name) ?? [];
  if (grants.has('fixedWindow'))
    add('fixedWindow', '<= 1000 per aligned 1 s window', alignedWindowsOver(t('fixedWindow'), 1000, 1000));
  if (grants.has('slidingWindowCounter'))
    add(
      'slidingWindowCounter',
      '<= 1000 per aligned 1 s window',
      alignedWindowsOver(t('slidingWindowCounter'), 1000, 1000),
    );
  if (grants.has('slidingWindowLog'))
    add('slidingWindowLog', '<= 1000 in every 1 s window', slidingWindowsOver(t('slidingWindowLog'), 1000, 1000));
  if (grants.has('tokenBucket'))
    add('tokenBucket', '<= 1000 + 1000/s x T (worst = excess)', bucketIntervalsOver(t('tokenBucket'), 1000, 1));
  if (grants.has('gcra')) add('gcra', '<= 1000 + 1000/s x T (worst = excess)', bucketIntervalsOver(t('gcra'), 1000, 1));
  if (grants.has('gcra900'))
    add('gcra900', '<= 900 + 900/s x T (worst = excess)', bucketIntervalsOver(t('gcra900'), 900, 0.9));
  if (grants.has('crossSlot')) {
    // On a Cluster each rule was decided in its own slot at its own time (crossSlot#r); standalone, at one.
    const at = (r: number) => (grants.has(`crossSlot#${r}`) ? t(`crossSlot#${r}`) : t('crossSlot'));
    add('crossSlot', 'user rule: <= 1000 per aligned 1 s window', alignedWindowsOver(at(0), 1000, 1000));
    add('crossSlot', 'global rule: <= 800 + 700/s x T (worst = excess)', bucketIntervalsOver(at(1), 800, 0.7));
  }
  if (grants.has('policy')) {
    add('policy', 'rule fw: <= 1000 per aligned 1 s window', alignedWindowsOver(t('policy'), 1000, 1000));
    add('policy', 'rule tb: <= 1500 + 900/s x T (worst = excess)', bucketIntervalsOver(t('policy'), 1500, 0.9));
  }
  console.info(`\n${label}`);
  console.table(rows);
  return total;
}

describe(`exactness across ${PROCESSES} processes x ${IN_FLIGHT} in flight on one hot key, 1,000/s for ${DURATION_MS / 1000} s`, () => {
  let server: TestRedis;
  beforeAll(async () => {
    server = await startTestRedis();
  });
  afterAll(async () => server?.stop());

  it('standalone Redis: no window ever admits more than the algorithm allows', async () => {
    const algorithms = [
      'fixedWindow',
      'slidingWindowLog',
      'slidingWindowCounter',
      'tokenBucket',
      'gcra',
      'gcra900',
      'policy',
      'crossSlot',
    ];
    const { grants, decisions, fallbacks } = await runFleet({ REDIS_URL: server.url }, algorithms);
    const over = checkBounds(grants, `standalone: ${decisions} decisions, ${fallbacks} decided by the fail mode`);
    expect(over).toBe(0);
    // The limiter was really exercised: most of the budget was used (5 s x 1,000/s, plus the bucket's burst).
    for (const name of algorithms) expect(grants.get(name)?.length ?? 0).toBeGreaterThan(3_500);
  }, 60_000);
});

describe(`exactness on a Redis Cluster (3 masters, 3 replicas), ${PROCESSES} processes x ${IN_FLIGHT} in flight`, () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startTestCluster();
  }, 60_000);
  afterAll(async () => cluster?.stop());

  it('refuses, at bind, a rule whose grants cannot be refunded in a policy that may span slots', async () => {
    const { createLimiter, fixedWindow, smoothBursty } = await import('@sluice/core');
    const { redisStore } = await import('@sluice/redis');
    const client = cluster.client();
    const store = redisStore({ redis: client, denyCache: false });
    expect(() =>
      createLimiter({
        rules: [
          smoothBursty({ permitsPerSecond: 1 }),
          fixedWindow({ limit: 9, windowMs: 1000, name: 'g', scope: 'global' }),
        ],
        store,
      }),
    ).toThrow(/cannot be refunded/);
    expect(() =>
      createLimiter({
        rules: [
          fixedWindow({ limit: 1, windowMs: 1000 }),
          fixedWindow({ limit: 9, windowMs: 1000, name: 'g', scope: 'global' }),
        ],
        store,
      }),
    ).not.toThrow();
    await store.close();
    client.disconnect();
  });

  it('no window ever admits more than the algorithm allows: a policy, and a policy spanning slots', async () => {
    const algorithms = ['fixedWindow', 'slidingWindowLog', 'tokenBucket', 'policy', 'crossSlot'];
    const { grants, decisions, fallbacks } = await runFleet(
      { CLUSTER_NODES: JSON.stringify(cluster.startupNodes) },
      algorithms,
    );
    const over = checkBounds(grants, `cluster: ${decisions} decisions, ${fallbacks} decided by the fail mode`);
    expect(over).toBe(0);
    for (const name of algorithms) expect(grants.get(name)?.length ?? 0).toBeGreaterThan(3_500);
  }, 60_000);
});

// The same fleet on the other client libraries (a slice of the algorithms; ioredis runs them all above).
describe.each(['node-redis', 'glide'] as const)(
  `exactness on %s, ${PROCESSES} processes x ${IN_FLIGHT} in flight`,
  (client) => {
    let server: TestRedis;
    let cluster: TestCluster;
    beforeAll(async () => {
      server = await startTestRedis();
      cluster = await startTestCluster({ replicas: 0 });
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
      await cluster?.stop();
    });

    it('standalone and Cluster: no window ever admits more than the algorithm allows', async () => {
      for (const [where, env, algorithms] of [
        ['standalone', { REDIS_URL: server.url }, ['tokenBucket', 'policy']],
        ['cluster', { CLUSTER_NODES: JSON.stringify(cluster.startupNodes) }, ['fixedWindow', 'crossSlot']],
      ] as const) {
        const { grants, decisions, fallbacks } = await runFleet({ ...env, CLIENT: client }, [...algorithms]);
        expect(
          checkBounds(grants, `${client} ${where}: ${decisions} decisions, ${fallbacks} decided by the fail mode`),
        ).toBe(0);
        for (const name of algorithms) expect(grants.get(name)?.length ?? 0).toBeGreaterThan(3_500);
      }
    }, 120_000);
  },
);
