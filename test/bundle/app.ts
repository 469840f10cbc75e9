/**
 * The app test/bundle/bundle.test.ts bundles into one file and runs from a folder with no node_modules and
 * no .lua file: exact decisions on Redis (a one-rule limiter, a two-rule policy, a refund), then a leased
 * limiter, each told to fail closed so a script that cannot be composed shows as a denial, not as a local
 * answer; then a divided limiter. Prints one JSON line: what each step answered and every store error the
 * stores reported.
 */
import { type Limiter, createLimiter, fixedWindow, slidingWindowLog, tokenBucket } from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

/**
 * Far past the default deadline: a loaded test machine may take longer than that for a first call (which
 * loads its script), and this app is about the scripts being there, not about how fast Redis answers.
 */
const DEADLINE_MS = 10_000;

/** What four tries on one key answer: the remaining count of each admitted one, or 'denied'. */
async function remaining(limiter: Pick<Limiter, 'tryAcquire'>): Promise<(number | 'denied')[]> {
  const out: (number | 'denied')[] = [];
  for (let i = 0; i < 4; i++) {
    const d = await limiter.tryAcquire('user-1');
    out.push(d.allowed ? d.remaining : 'denied');
  }
  return out;
}

/** How many of `tries` single-permit tries on one key the limiter admits. */
async function admitted(limiter: Pick<Limiter, 'tryAcquire'>, tries: number): Promise<number> {
  let count = 0;
  for (let i = 0; i < tries; i++) if ((await limiter.tryAcquire('user-1')).allowed) count++;
  return count;
}

// No top-level await: the test bundles this as CommonJS too.
async function main(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  const errors: string[] = [];
  const store = redisStore({ redis, failMode: 'closed', timeoutMs: DEADLINE_MS });
  store.on('store-error', (error) => errors.push(`exact: ${error.message}`));

  // One rule: decide_one.lua. Two rules: decide.lua. A refund: adjust.lua.
  const one = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 60_000 }), store, prefix: `${prefix}-one` });
  const policy = createLimiter({
    rules: [
      slidingWindowLog({ limit: 5, windowMs: 60_000, name: 'minute' }),
      tokenBucket({ capacity: 2, refillPerSecond: 0.001, name: 'burst' }),
    ],
    store,
    prefix: `${prefix}-policy`,
  });
  const exactOne = await remaining(one);
  const exactPolicy = await remaining(policy);
  await one.refund('user-1', 1);
  const afterRefund = (await one.tryAcquire('user-1')).remaining;

  // Leased: a batch of the bucket's tokens leased by lease.lua and spent here; exactly the capacity admitted.
  const leasing = leasedStore({ redis, failMode: 'closed', timeoutMs: DEADLINE_MS });
  leasing.on('store-error', (error) => errors.push(`leased: ${error.message}`));
  let leases = 0;
  leasing.on('lease', () => leases++);
  const leased = createLimiter({
    rules: tokenBucket({ capacity: 100, refillPerSecond: 0.001 }),
    store: leasing,
    prefix: `${prefix}-leased`,
  });
  const leasedAdmitted = await admitted(leased, 150);

  // Divided: membership.lua's first heartbeat gives this node, alone in its fleet, 80 of 100; the other 20
  // are the reserve, drawn by lease.lua. (No failMode: a divided node keeps its share while Redis is away.)
  const dividing = dividedStore({ redis, timeoutMs: DEADLINE_MS, assumedNodes: 1, reserve: 0.2 });
  dividing.on('store-error', (error) => errors.push(`divided: ${error.message}`));
  const divided = createLimiter({
    rules: tokenBucket({ capacity: 100, refillPerSecond: 0.001 }),
    store: dividing,
    prefix: `${prefix}-divided`,
  });
  const dividedAdmitted = await admitted(divided, 150);

  await Promise.all([one.close(), policy.close(), leased.close(), divided.close()]);
  await Promise.all([store.close(), leasing.close(), dividing.close()]);
  redis.disconnect();
  console.log(JSON.stringify({ exactOne, exactPolicy, afterRefund, leasedAdmitted, leases, dividedAdmitted, errors }));
}

const [url, prefix] = process.argv.slice(2);
if (url === undefined || prefix === undefined) throw new Error('usage: node app <redis url> <prefix>');
main(url, prefix).catch((error: unknown) => {
  console.error(error);
  // Now: a failed run would otherwise wait on the Redis connection it left open, until the test's timeout.
  process.exit(1);
});
