/**
 * What one lone decision's script costs Redis: INFO commandstats' time per script call (the script and the
 * commands it runs, not the network), one decision at a time over 1,000 keys, for sluice exact mode
 * (fixedWindow, tokenBucket: decide_one.lua as the limiter calls it, by FCALL), rate-limiter-flexible's
 * RateLimiterRedis, and the window floor (bench/lua/window-floor.lua: sluice's fixedWindow semantics, a
 * decision read before it is written and a denial that counts nothing, in the fewest Lua steps). Lone calls
 * find Redis's caches cold, so each costs several times what the same call costs inside a busy batch; this is
 * the part of a lone decision's latency and CPU the script decides. Medians of interleaved rounds; writes
 * bench/results/lone-script.json.
 *
 * Run: pnpm --filter @sluice/bench bench:lone-script (BENCH_ROUNDS=n for more rounds)
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, writeJson } from './harness.js';

const HUGE = 1_000_000_000;
const KEYS = 1_000;
const DECISIONS = 4_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const RLF = 'rate-limiter-flexible RateLimiterRedis';
const FLOOR = 'window floor: sluice fixedWindow semantics, fewest Lua steps';

const server = await spawnRedisServer();
const redis = new Redis(server.url);
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

/** Script calls and their total time so far (evalsha, fcall). */
async function scriptTime(): Promise<{ calls: number; usec: number }> {
  const info = await redis.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|fcall):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

const floorSha = (await redis.script(
  'LOAD',
  readFileSync(new URL('../lua/window-floor.lua', import.meta.url), 'utf8'),
)) as string;
const windowLimiter = createLimiter({
  rules: fixedWindow({ limit: HUGE, windowMs: 60_000 }),
  store: redisStore({ redis }),
  prefix: 'fw',
});
const bucketLimiter = createLimiter({
  rules: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE }),
  store: redisStore({ redis }),
  prefix: 'tb',
});
const rlf = new RateLimiterRedis({ storeClient: redis, points: HUGE, duration: 60, keyPrefix: 'rf' });
const subjects: Array<[string, (key: string) => Promise<unknown>]> = [
  ['sluice exact fixedWindow', (key) => windowLimiter.tryAcquire(key)],
  ['sluice exact tokenBucket', (key) => bucketLimiter.tryAcquire(key)],
  [RLF, (key) => rlf.consume(key)],
  [FLOOR, (key) => redis.evalsha(floorSha, 2, `wf{${key}}ab`, 'wf{wf}~B', HUGE, 60_000, 1)],
];

const samples = new Map<string, number[]>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const [subject, decide] of subjects) {
    // Warm up: connections, sluice's function library loaded, JIT.
    for (let i = 0; i < 300; i++) await decide(keys[i % KEYS] as string);
    const before = await scriptTime();
    for (let i = 0; i < DECISIONS; i++) await decide(keys[(i * 7) % KEYS] as string);
    const after = await scriptTime();
    const perCall = (after.usec - before.usec) / (after.calls - before.calls);
    samples.set(subject, [...(samples.get(subject) ?? []), perCall]);
  }
}
const rows = [...samples].map(([subject, perCall]) => ({
  subject,
  scriptUsPerDecision: median(perCall),
  rounds: perCall,
}));
const of = (subject: string) => rows.find((r) => r.subject === subject)?.scriptUsPerDecision ?? Number.NaN;
const ratios = rows.map((r) => ({ subject: r.subject, toRateLimiterRedis: r.scriptUsPerDecision / of(RLF) }));
for (const r of rows) {
  console.log(
    `${r.subject.padEnd(62)} ${r.scriptUsPerDecision.toFixed(2).padStart(6)} us/decision  ` +
      `${(r.scriptUsPerDecision / of(RLF)).toFixed(2)}x RateLimiterRedis`,
  );
}
writeJson(fileURLToPath(new URL('../results/lone-script.json', import.meta.url)), {
  date: new Date().toISOString(),
  node: process.version,
  rounds: ROUNDS,
  rows,
  ratios,
});
await Promise.all([windowLimiter.close(), bucketLimiter.close()]);
redis.disconnect();
await server.stop();
process.exit(0);
