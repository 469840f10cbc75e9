/**
 * rateLimitedProcessor while the limiter's Redis is away, with failMode 'closed': the fail mode's refusal is the
 * store's, not a tenant's, so the whole queue waits (queue.rateLimit, every job keeps its place) instead of each
 * tenant's job being moved to the delayed set one by one (c132e5b's fix for tenants did that: every job of
 * every tenant went through the delayed set). Real BullMQ on one throwaway Redis, the limiter on another one,
 * stopped (SIGSTOP) before the store's first word; resumed, every job runs, none failed.
 */
import { createLimiter, tokenBucket } from '@sluice/core';
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

describe('rateLimitedProcessor (BullMQ) with the limiter store away', () => {
  it("failMode 'closed': the queue waits, no tenant's job is delayed; once Redis answers every job runs", async () => {
    const away = await storeOnStoppedRedis({ failMode: 'closed', timeoutMs: 200 });
    closers.push(() => away.close());
    const limiter = createLimiter({
      prefix: `bullmq-away-${process.pid}`,
      rules: tokenBucket({ name: 'tenant', capacity: 100, refillPerSecond: 100 }),
      store: away.store,
    });
    closers.push(() => limiter.close());
    const connection = new Redis(testRedis().server.url, { maxRetriesPerRequest: null });
    const queue = new Queue('away', { connection });
    const limited: string[] = [];
    const ran: string[] = [];
    const worker = new Worker(
      'away',
      rateLimitedProcessor(
        async (job: Job<{ tenant: string }>) => {
          ran.push(job.id as string);
        },
        {
          limiter,
          queue,
          key: (job: Job<{ tenant: string }>) => `tenant:${job.data.tenant}`,
          onLimited: (_decision, job) => limited.push(job.id as string),
        },
      ),
      { connection, concurrency: 1, autorun: false },
    );
    const failed: string[] = [];
    worker.on('failed', (job, error) => failed.push(`${job?.id}: ${error.message}`));
    closers.push(
      async () => connection.quit(),
      async () => queue.close(),
      async () => worker.close(),
    );
    const jobs = await queue.addBulk(
      ['a', 'b', 'a', 'b', 'a', 'b'].map((tenant) => ({ name: 'job', data: { tenant } })),
    );
    const refused = new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (limited.length >= 2) {
          clearInterval(check);
          resolve();
        }
      }, 10);
      closers.push(async () => clearInterval(check));
    });
    void worker.run();
    await refused;
    // Every refusal so far held the queue: nothing in the delayed set, the queue rate-limited.
    expect(await queue.getDelayedCount()).toBe(0);
    expect(await queue.getWaitingCount()).toBe(jobs.length);
    expect(ran).toEqual([]);
    const done = new Promise<void>((resolve) =>
      worker.on('completed', () => {
        if (ran.length === jobs.length) resolve();
      }),
    );
    away.resume();
    await done;
    expect(ran).toEqual(jobs.map((job) => job.id));
    expect(failed).toEqual([]);
  }, 30_000);
});
