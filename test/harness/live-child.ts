/**
 * The other process of the live-limits tests (see live-process.ts): one node of a limiter on REDIS_URL or the
 * Cluster at CLUSTER_NODES, under PREFIX, in MODE (exact, leased or divided). Its rule is RULE: 'bucket' (a
 * token bucket named 'api' of capacity CAPACITY that refills a token in 1,000 s) or 'daily' (a day's fixed
 * window named 'api' of LIMIT). DENY_CACHE=0 turns exact mode's deny cache off; HEARTBEAT_MS is divided
 * mode's heartbeat. Commands, one per line on stdin:
 * - `decide <n> <key>`: n single-permit decisions, one at a time; prints `RESULT {"granted","version","limit",
 *   "remaining"}` (the configuration version, limit and remaining of the last decision);
 * - `version <v>`: once the node decides under configuration version v or later, prints `VERSION <v>`;
 * - `share <s>`: divided mode, once the node holds the fraction s of the limit, prints `SHARE <s>`.
 */
import { createInterface } from 'node:readline';
import { type Algorithm, type Store, createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { type MembershipEvent, dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';

const env = process.env;
const nodes = env.CLUSTER_NODES ? (JSON.parse(env.CLUSTER_NODES) as Array<{ host: string; port: number }>) : undefined;
const redis = nodes ? new Cluster(nodes) : new Redis(env.REDIS_URL as string);
const rule: Algorithm =
  env.RULE === 'daily'
    ? fixedWindow({ name: 'api', limit: Number(env.LIMIT), windowMs: 86_400_000 })
    : tokenBucket({ name: 'api', capacity: Number(env.CAPACITY), refillPerSecond: 0.001 });
/** This node's share of the limit (divided mode: its last membership event), and who waits for it to change. */
let share = 0;
const heard: Array<() => void> = [];
const hear = () => {
  for (const waiter of heard.splice(0)) waiter();
};
function storeOf(mode: string | undefined): Store & { close(): Promise<void> } {
  if (mode === 'leased') return leasedStore({ redis }).on('reconfigured', hear);
  if (mode === 'divided') {
    const store = dividedStore({ redis, heartbeatMs: Number(env.HEARTBEAT_MS ?? 250), reserve: 0 });
    return store.on('reconfigured', hear).on('membership', (event: MembershipEvent) => {
      share = event.share;
      hear();
    });
  }
  // DENY_CACHE=0: every decision asks Redis (a denial cached before a change holds until its message arrives).
  return redisStore({ redis, denyCache: env.DENY_CACHE !== '0' }).on('reconfigured', hear);
}
const store = storeOf(env.MODE);
const limiter = createLimiter({ rules: rule, store, prefix: env.PREFIX as string });
await limiter.ready();
console.log('READY');

/** Resolves once `holds()` is true, checked after each reconfigured or membership event of the store. */
async function until(holds: () => boolean): Promise<void> {
  while (!holds()) await new Promise<void>((resolve) => heard.push(resolve));
}

for await (const line of createInterface({ input: process.stdin })) {
  const [command, count, key] = line.split(' ');
  if (command === 'version') {
    await until(() => limiter.configVersion >= Number(count));
    console.log(`VERSION ${count}`);
    continue;
  }
  if (command === 'share') {
    await until(() => share === Number(count));
    console.log(`SHARE ${count}`);
    continue;
  }
  if (command !== 'decide') break;
  let granted = 0;
  let version = 0;
  let limit = 0;
  let remaining = 0;
  for (let i = 0; i < Number(count); i++) {
    const decision = await limiter.tryAcquire(key as string);
    if (decision.allowed) granted++;
    version = decision.configVersion ?? 1;
    limit = decision.limit;
    remaining = decision.remaining;
  }
  console.log(`RESULT ${JSON.stringify({ granted, version, limit, remaining })}`);
}
await limiter.close();
await store.close();
redis.disconnect();
