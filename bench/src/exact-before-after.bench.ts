/**
 * Exact mode at 10,000 keys and 128 decisions in flight, this checkout beside another (BENCH_BEFORE: a checkout's
 * root, bootstrapped) and beside rate-limiter-flexible's RateLimiterRedis, on one spawned redis-server and one
 * ioredis client: decisions per second, p99 latency and redis-server CPU per decision, medians of interleaved
 * rounds (each subject once per round, in turn). For a change to exact mode's path, its cost in one run.
 *
 * Run: BENCH_BEFORE=/tmp/before pnpm --filter @sluice/bench bench:exact-before-after (BENCH_ROUNDS=n, default 5)
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { driveInFlight, fmt, median, redisCpuUs, writeJson } from './harness.js';

const KEYS = 10_000;
const IN_FLIGHT = 128;
const TOTAL = 60_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BEFORE = process.env.BENCH_BEFORE;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
type Decide = (key: string) => Promise<unknown>;

interface SluiceSources {
  readonly core: typeof import('@sluice/core');
  readonly redis: typeof import('@sluice/redis');
}

/** sluice's core and redis packages from a checkout's sources (this one's, or BENCH_BEFORE's). */
async function sourcesAt(root: string | undefined): Promise<SluiceSources> {
  if (root === undefined) return { core: await import('@sluice/core'), redis: await import('@sluice/redis') };
  return {
    core: (await import(`${root}/packages/core/src/index.ts`)) as SluiceSources['core'],
    redis: (await import(`${root}/packages/redis/src/index.ts`)) as SluiceSources['redis'],
  };
}

const server = await spawnRedisServer();
const redis = new Redis(server.url);
const now = await sourcesAt(undefined);
const before = BEFORE === undefined ? undefined : await sourcesAt(BEFORE);

let made = 0;
/** An exact-mode limiter of `kind` on `sources`, on the shared client. */
function sluice(sources: SluiceSources, kind: 'fixedWindow' | 'tokenBucket'): Decide {
  const { createLimiter, fixedWindow, tokenBucket } = sources.core;
  const rules =
    kind === 'fixedWindow'
      ? fixedWindow({ limit: 1_000_000_000, windowMs: 60_000 })
      : tokenBucket({ capacity: 1_000_000_000, refillPerSecond: 1_000_000 });
  const limiter = createLimiter({ rules, store: sources.redis.redisStore({ redis }), prefix: `ba${++made}` });
  return (key) => limiter.tryAcquire(key);
}

const subjects: Array<[string, () => Decide]> = [
  [
    'RateLimiterRedis',
    () => {
      const rlf = new RateLimiterRedis({
        storeClient: redis,
        points: 1_000_000_000,
        duration: 60,
        keyPrefix: `rl${++made}`,
      });
      return (key) => rlf.consume(key);
    },
  ],
  ...(['fixedWindow', 'tokenBucket'] as const).flatMap(
    (kind): Array<[string, () => Decide]> => [
      ...(before === undefined
        ? []
        : [[`sluice ${kind} before`, () => sluice(before, kind)] as [string, () => Decide]]),
      [`sluice ${kind}`, () => sluice(now, kind)],
    ],
  ),
];

interface Row {
  readonly perSecond: number;
  readonly p99Us: number;
  readonly redisCpuUs: number;
}

async function measure(decide: Decide): Promise<Row> {
  for (let i = 0; i < 500; i++) await decide(keys[i % KEYS] as string);
  const cpuBefore = await redisCpuUs(redis);
  const { elapsedMs: elapsed, latencies } = await driveInFlight(
    decide,
    (i) => keys[i % KEYS] as string,
    TOTAL,
    IN_FLIGHT,
  );
  const cpuUs = (await redisCpuUs(redis)) - cpuBefore;
  return {
    perSecond: (TOTAL / elapsed) * 1000,
    p99Us: (latencies[Math.floor(TOTAL * 0.99)] as number) * 1000,
    redisCpuUs: cpuUs / TOTAL,
  };
}

console.log(`exact mode before/after — ${KEYS} keys, ${IN_FLIGHT} in flight, ${ROUNDS} interleaved rounds`);
const samples = new Map<string, Row[]>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, make] of subjects) {
    await redis.flushall();
    const row = await measure(make());
    samples.set(name, [...(samples.get(name) ?? []), row]);
    console.log(
      `  round ${round} ${name.padEnd(28)} ${fmt(row.perSecond).padStart(7)}/s  p99 ${row.p99Us.toFixed(0)} us  ` +
        `${row.redisCpuUs.toFixed(2)} redis cpu us/decision`,
    );
  }
}
const peer = median((samples.get('RateLimiterRedis') ?? []).map((r) => r.perSecond));
const table = [...samples].map(([name, rows]) => ({
  subject: name,
  'decisions/s': Math.round(median(rows.map((r) => r.perSecond))),
  'x RateLimiterRedis': Number((median(rows.map((r) => r.perSecond)) / peer).toFixed(2)),
  'p99 us': Math.round(median(rows.map((r) => r.p99Us))),
  'redis cpu us/decision': Number(median(rows.map((r) => r.redisCpuUs)).toFixed(2)),
}));
console.table(table);
writeJson(fileURLToPath(new URL('../results/exact-before-after.json', import.meta.url)), {
  date: new Date().toISOString(),
  before: BEFORE ?? null,
  keys: KEYS,
  inFlight: IN_FLIGHT,
  rounds: ROUNDS,
  rows: table,
});
redis.disconnect();
await server.stop();
process.exit(0);
