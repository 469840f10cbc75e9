/**
 * The other process of the live-limits test: one node of a limiter (a token bucket named 'api' of capacity
 * CAPACITY) on REDIS_URL or the Cluster at CLUSTER_NODES, under PREFIX. Each line on stdin, `decide <n> <key>`,
 * makes n single-permit decisions for key, one at a time, and prints `RESULT {"granted":..,"version":..,"limit":..}`
 * (the configuration version and limit the last decision was made under). DENY_CACHE=0 turns the deny cache off.
 */
import { createInterface } from 'node:readline';
import { createLimiter, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';

const env = process.env;
const nodes = env.CLUSTER_NODES ? (JSON.parse(env.CLUSTER_NODES) as Array<{ host: string; port: number }>) : undefined;
const redis = nodes ? new Cluster(nodes) : new Redis(env.REDIS_URL as string);
const limiter = createLimiter({
  rules: tokenBucket({ name: 'api', capacity: Number(env.CAPACITY), refillPerSecond: 0.001 }),
  // DENY_CACHE=0: every decision asks Redis (a denial cached before a change holds until its message arrives).
  store: redisStore({ redis, denyCache: env.DENY_CACHE !== '0' }),
  prefix: env.PREFIX as string,
});
await limiter.ready();
console.log('READY');
for await (const line of createInterface({ input: process.stdin })) {
  const [command, count, key] = line.split(' ');
  if (command !== 'decide') break;
  let granted = 0;
  let version = 0;
  let limit = 0;
  for (let i = 0; i < Number(count); i++) {
    const decision = await limiter.tryAcquire(key as string);
    if (decision.allowed) granted++;
    version = decision.configVersion ?? 1;
    limit = decision.limit;
  }
  console.log(`RESULT ${JSON.stringify({ granted, version, limit })}`);
}
await limiter.close();
redis.disconnect();
