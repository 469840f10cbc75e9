/**
 * One process of the distributed-semaphore tests. MODE=fleet: CALLERS callers each run JOBS jobs of JOB_MS on
 * one key (max MAX), counting who is inside with an independent Redis counter (INCR on entry, DECR on exit),
 * and print how many entries saw more than MAX inside. MODE=hold: take HOLD slots, print "HOLDING", and hold
 * them until killed, or, resumed after a SIGSTOP past the lease, report whether each slot was lost and release them.
 */
import { concurrencyLimiter } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const env = process.env;
const redis = new Redis(env.REDIS_URL as string);
const counter = new Redis(env.REDIS_URL as string);
const leaseMs = Number(env.LEASE_MS ?? 30_000);
// A lease must leave room for a renewal to reach Redis (at least 4 x the store's timeoutMs). FAIL_MODE=default
// and TIMEOUT_MS=default leave the store's defaults ('local', 50 ms), as a new user's would be.
const failMode = (env.FAIL_MODE ?? 'closed') as 'local' | 'open' | 'closed' | 'default';
const timeoutMs = env.TIMEOUT_MS === 'default' ? undefined : Number(env.TIMEOUT_MS ?? Math.min(1_000, leaseMs / 4));
const store = redisStore({
  redis,
  ...(timeoutMs === undefined ? {} : { timeoutMs }),
  ...(failMode === 'default' ? {} : { failMode }),
});
let storeErrors = 0;
store.on('store-error', () => storeErrors++);
const limiter = concurrencyLimiter({ max: Number(env.MAX), store, prefix: env.PREFIX as string, leaseMs });
const key = env.KEY ?? 'job';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

if (env.MODE === 'hold') {
  const slots = await Promise.all(Array.from({ length: Number(env.HOLD) }, () => limiter.acquire(key)));
  // A SIGSTOP is seen as a jump in wall time (no signal reaches a stopped process): once resumed past its
  // lease, the next renewal finds the slots gone. The clock is read before HOLDING is printed: on a loaded
  // machine the stop may land before this process runs another line.
  let last = Date.now();
  process.stdout.write('HOLDING\n');
  for (;;) {
    await sleep(50);
    const now = Date.now();
    const gap = now - last;
    last = now;
    if (gap <= Number(env.LEASE_MS) / 2) continue;
    process.stdout.write(`resumed after a ${gap} ms pause\n`);
    await sleep(Number(env.LEASE_MS) / 3 + 500);
    const lost = slots.filter((s) => s.lost).length;
    const aborted = slots.filter((s) => s.signal.aborted).length;
    process.stdout.write(`lost ${lost}, releasing\n`);
    for (const slot of slots) await slot.release();
    process.stdout.write(`\nSLUICE-RESULT ${JSON.stringify({ lost, aborted })}\n`, () => process.exit(0));
    break;
  }
  await new Promise(() => {});
}

const jobs = Number(env.JOBS);
const jobMs = Number(env.JOB_MS);
const counterKey = env.COUNTER as string;
const startAt = Number(env.START_AT);
await sleep(Math.max(0, startAt - Date.now()));
let entries = 0;
let over = 0;
let worst = 0;
const started = Date.now();
await Promise.all(
  Array.from({ length: Number(env.CALLERS) }, async () => {
    for (let j = 0; j < jobs; j++) {
      await limiter.run(key, async () => {
        const inside = await counter.incr(counterKey);
        entries++;
        worst = Math.max(worst, inside);
        if (inside > Number(env.MAX)) over++;
        await sleep(jobMs);
        await counter.decr(counterKey);
      });
    }
  }),
);
const elapsedMs = Date.now() - started;
await limiter.close();
await store.close();
redis.disconnect();
counter.disconnect();
process.stdout.write(`\nSLUICE-RESULT ${JSON.stringify({ entries, over, worst, elapsedMs, storeErrors })}\n`, () =>
  process.exit(0),
);
