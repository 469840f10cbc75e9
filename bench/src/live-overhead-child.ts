/**
 * One side of bench:live-overhead: exact decisions made by the sluice checkout at ROOT (this one, or an
 * earlier commit's worktree) on the Redis at REDIS_URL, and the Redis CPU they cost (INFO cpu). RULES picks
 * the limiter (fixedWindow, tokenBucket or a two-rule policy), IN_FLIGHT how many decisions are asked at once
 * (1: lone decisions, decide_one.lua; 128: batches, decide.lua). Prints `RESULT {"redisUsPerDecision": n}`.
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { redisCpuUs } from './harness.js';

const env = process.env;
const root = env.ROOT as string;
const core = (await import(pathToFileURL(`${root}/packages/core/src/index.ts`).href)) as typeof import('@sluice/core');
const { redisStore } = (await import(
  pathToFileURL(`${root}/packages/redis/src/index.ts`).href
)) as typeof import('@sluice/redis');
const HUGE = 1_000_000_000;
const rules = {
  fixedWindow: () => core.fixedWindow({ name: 'fw', limit: HUGE, windowMs: 60_000 }),
  tokenBucket: () => core.tokenBucket({ name: 'tb', capacity: HUGE, refillPerSecond: HUGE }),
  policy: () => [
    core.fixedWindow({ name: 'fw', limit: HUGE, windowMs: 60_000 }),
    core.tokenBucket({ name: 'tb', capacity: HUGE, refillPerSecond: HUGE }),
  ],
}[env.RULES as 'fixedWindow' | 'tokenBucket' | 'policy'];
const decisions = Number(env.DECISIONS);
const inFlight = Number(env.IN_FLIGHT);
const redis = new Redis(env.REDIS_URL as string);
const store = redisStore({ redis });
const limiter = core.createLimiter({ rules: rules(), store, prefix: `o${env.RULES}` });
const keys = Array.from({ length: 1_000 }, (_, i) => `user:${i}`);

/** `count` decisions over the keys, `inFlight` at a time. */
async function decide(count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await limiter.tryAcquire(keys[(next++ * 7) % keys.length] as string);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

await decide(2_000); // warm up: connection, function library, JIT
const before = await redisCpuUs(redis);
await decide(decisions);
const after = await redisCpuUs(redis);
console.log(`RESULT ${JSON.stringify({ redisUsPerDecision: (after - before) / decisions })}`);
await limiter.close();
await store.close();
redis.disconnect();
