/**
 * rateLimitedProcessor while the limiter's Redis is away, with failMode 'closed': the fail mode's refusal is the
 * store's, not a tenant's, so the whole queue waits (queue.rateLimit, every job keeps its place) instead of each
 * tenant's job being moved to the delayed set one by one (c132e5b's fix for tenants did that: every job of
 * every tenant went through the delayed set). Real BullMQ on one throwaway Redis, the limiter on another one,
 * stopped (SIGSTOP) before the store's first word; resumed, every job runs, none failed. Also failMode 'local'
 * with a share of the limit below the job's permits: never under the share is not never (a job failed
 * NEVER_ALLOWED): the queue asks again each second (FALLBACK_RETRY_MS), as the limiter's waiting calls do.
 */
import { type Limiter, createLimiter, tokenBucket } from '@sluice/core';
import { rateLimitedProcessor } from '@sluice/core/bullmq';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { storeOnStoppedRedis } from '../harness/stopped-redis.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A queue of tenants' jobs (6, alternating a and b) on the test Redis, processed through `limiter`, not yet run. */
async function tenantQueue(name: string, limiter: Limiter, permits: number) {
  const connection = new Redis(testRedis().server.url, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection });
  const limited: string[] = [];
  const ran: string[] = [];
  const failed: string[] = [];
  const worker = new Worker(
    name,
    rateLimitedProcessor(
      async (job: Job<{ tenant: string }>) => {
        ran.push(job.id as string);
      },
      {
        limiter,
        queue,
        permits,
        key: (job: Job<{ tenant: string }>) => `tenant:${job.data.tenant}`,
        onLimited: (_decision, job) => limited.push(job.id as string),
      },
    ),
    { connection, concurrency: 1, autorun: false },
  );
  worker.on('failed', (job, error) => failed.push(`${job?.id}: ${error.message}`));
  closers.push(
    async () => connection.quit(),
    async () => queue.close(),
    async () => worker.close(),
  );
  const jobs = await queue.addBulk(['a', 'b', 'a', 'b', 'a', 'b'].map((tenant) => ({ name: 'job', data: { tenant } })));
  /** Resolves once `count` refusals were heard (onLimited), or a job failed, checked every 10 ms. */
  const refusals = (count: number) =>
    new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (limited.length < count && failed.length === 0) return;
        clearInterval(check);
        resolve();
      }, 10);
      closers.push(async () => clearInterval(check));
    });
  const allRan = new Promise<void>((resolve) =>
    worker.on('completed', () => {
      if (ran.length === jobs.length) resolve();
    }),
  );
  return { queue, worker, jobs, ran, failed, refusals, allRan };
}

describe('rateLimitedProcessor (BullMQ) with the limiter store away', () => {
  it.each([
    ["failMode 'closed'", { failMode: 'closed' as const }, 1],
    [
      "failMode 'local', a share the job's permits cannot fit (was NEVER_ALLOWED)",
      { failMode: 'local' as const, assumedNodes: 20 },
      10,
    ],
  ])(
    '%s: the queue waits, no job is delayed or failed; once Redis answers every job runs in order',
    async (_name, mode, permits) => {
      const away = await storeOnStoppedRedis({ ...mode, timeoutMs: 200 });
      closers.push(() => away.close());
      const limiter = createLimiter({
        prefix: `bullmq-away-${process.pid}-${permits}`,
        rules: tokenBucket({ name: 'tenant', capacity: 100, refillPerSecond: 100 }),
        store: away.store,
      });
      closers.push(() => limiter.close());
      const { queue, worker, jobs, ran, failed, refusals, allRan } = await tenantQueue(
        `away-${permits}`,
        limiter,
        permits,
      );
      void worker.run();
      await refusals(2);
      // Every refusal so far held the queue: nothing in the delayed set, nothing failed, nothing ran.
      expect(failed).toEqual([]);
      expect(await queue.getDelayedCount()).toBe(0);
      // A job the worker has just taken is active while its refusal is asked (a CI run caught one so): none left.
      expect(await queue.getJobCountByTypes('waiting', 'active')).toBe(jobs.length);
      expect(ran).toEqual([]);
      away.resume();
      await allRan;
      expect(ran).toEqual(jobs.map((job) => job.id));
      expect(failed).toEqual([]);
    },
    30_000,
  );
});
