/**
 * One process of the throttle fleet tests (see throttle-process.ts): a redisStore on REDIS_URL or the Cluster
 * at CLUSTER_NODES, a limiter of LIMIT calls in any WINDOW_MS (a sliding window log) under PREFIX, and a
 * throttle over it (its turn's lease LEASE_MS, when given; the store's timeoutMs TIMEOUT_MS, 2,000 unless given). Commands, one per line on stdin:
 * - `run <id> [priority]`: starts a throttled call; once the call is in the queue on Redis, prints
 *   `ARRIVED <id> <t>` (t: when run was called, ms since the epoch with fractions); when it starts, prints
 *   `START <id> <t>`; if it fails, `FAILED <id> <code>`;
 * - `pause <ms>`: pauses the throttle on every node; prints `PAUSED <t>` once Redis holds the pause.
 */
import { createInterface } from 'node:readline';
import { createLimiter, slidingWindowLog, throttle } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';

const env = process.env;
const nodes = env.CLUSTER_NODES ? (JSON.parse(env.CLUSTER_NODES) as Array<{ host: string; port: number }>) : undefined;
const redis = nodes ? new Cluster(nodes) : new Redis(env.REDIS_URL as string);
const prefix = env.PREFIX as string;
const store = redisStore({ redis, timeoutMs: Number(env.TIMEOUT_MS ?? 2_000) });
const limiter = createLimiter({
  rules: slidingWindowLog({ limit: Number(env.LIMIT), windowMs: Number(env.WINDOW_MS) }),
  store,
  prefix,
});
const calls = throttle({ limiter, ...(env.LEASE_MS ? { leaseMs: Number(env.LEASE_MS) } : {}) });
await limiter.ready();
await store.ready();
console.log('READY');

/** Wall-clock now with sub-millisecond precision: comparable across the processes of one machine. */
const now = () => performance.timeOrigin + performance.now();
/** The turn queue's key: a command to its slot lands after the call's own first attempt there. */
const queueKey = `${prefix}{~turn:default}~q`;

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg, extra] = line.split(' ');
  if (command === 'run') {
    const arrived = now();
    calls
      .run(() => console.log(`START ${arg} ${now()}`), { priority: Number(extra ?? 0) })
      .catch((error: { code?: string }) => console.log(`FAILED ${arg} ${error.code}`));
    await new Promise((resolve) => setImmediate(resolve));
    await redis.zcard(queueKey);
    console.log(`ARRIVED ${arg} ${arrived}`);
  } else if (command === 'pause') {
    await calls.pause(Number(arg));
    console.log(`PAUSED ${now()}`);
  } else break;
}
await calls.close();
await limiter.close();
await store.close();
redis.disconnect();
