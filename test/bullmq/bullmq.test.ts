/**
 * rateLimitedProcessor with a real BullMQ queue and worker on a test Redis: a limit of 5 jobs a second holds
 * every job until it is admitted, in the order they were added, none failed; a job that can never pass fails
 * with NEVER_ALLOWED; a key function that throws fails its job through BullMQ (nothing unhandled).
 */
import { type Algorithm, createLimiter, fixedWindow, memoryStore, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { rateLimitedProcessor } from '@sluice/core/bullmq';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { unhandledDuring } from '../harness/unhandled.js';

const testRedis = useTestRedis();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
let queues = 0;

/** A queue and its worker (concurrency 1) on the test Redis, processing with the processor made for the queue. */
function queueWith(processorFor: (queue: Queue) => (job: Job) => Promise<unknown>) {
  const connection = new Redis(testRedis().server.url, { maxRetriesPerRequest: null });
  const name = `jobs${++queues}`;
  const queue = new Queue(name, { connection });
  const worker = new Worker(name, processorFor(queue), { connection, concurrency: 1 });
  const failed: [string | undefined, string][] = [];
  const completed: (string | undefined)[] = [];
  worker.on('failed', (job, error) => failed.push([job?.id, error.message]));
  worker.on('completed', (job) => completed.push(job.id));
  closers.push(
    async () => connection.quit(),
    async () => queue.close(),
    async () => worker.close(),
  );
  return { queue, worker, failed, completed };
}

/** Resolves once every job of `ids` completed on `worker` (its 'completed' events), within `ms`. */
function completedAll(worker: Worker, ids: readonly (string | undefined)[], ms = 20_000): Promise<void> {
  const left = new Set(ids);
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`jobs ${[...left].join(', ')} not completed within ${ms} ms`)), ms);
    const heard = (job: Job) => {
      left.delete(job.id);
      if (left.size > 0) return;
      clearTimeout(timer);
      worker.off('completed', heard);
      resolve();
    };
    worker.on('completed', heard);
  });
}

const HOUR = 3_600_000;
type Tenant = { tenant: string };

/** Resolves once `done()` holds, checked every 20 ms (bounded). */
async function until(done: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('rateLimitedProcessor (BullMQ)', () => {
  it('5 jobs a second: 20 jobs run in the order added, never more than 5 in a second, none failed', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000, name: 'downstream' }) });
    closers.push(() => limiter.close());
    const ran: { id: string; at: number }[] = [];
    const held: string[] = [];
    const { queue, failed } = queueWith((queue) =>
      rateLimitedProcessor(
        async (job: Job) => {
          ran.push({ id: job.id as string, at: Date.now() });
        },
        { limiter, queue, onLimited: (_decision, job) => held.push(job.id as string) },
      ),
    );
    const added = await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'send', data: { i } })));
    const started = Date.now();
    await until(() => ran.length === 20);
    const seconds = (Date.now() - started) / 1000;
    expect(ran.map((r) => r.id)).toEqual(added.map((j) => j.id));
    expect(failed).toEqual([]);
    // The limiter's windows are aligned seconds: at most 5 started in each.
    const perSecond = new Map<number, number>();
    for (const r of ran) perSecond.set(Math.floor(r.at / 1_000), (perSecond.get(Math.floor(r.at / 1_000)) ?? 0) + 1);
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5);
    // 20 jobs at 5 a second span at least three window boundaries; the held ones were tried again, not lost.
    expect(perSecond.size).toBeGreaterThanOrEqual(4);
    expect(held.length).toBeGreaterThan(0);
    console.info(
      `20 jobs in ${seconds.toFixed(2)} s (${(20 / seconds).toFixed(1)} a second), ${held.length} held back`,
    );
  });

  it('a job that can never pass fails with NEVER_ALLOWED; a key function that throws fails its job, nothing unhandled', async () => {
    const unhandled = await unhandledDuring(async () => {
      const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 60_000 }) });
      closers.push(() => limiter.close());
      const { queue, failed, completed } = queueWith((queue) =>
        rateLimitedProcessor(async () => 'done', {
          limiter,
          queue,
          permits: (job: Job) => (job.data as { permits: number }).permits,
          key: (job: Job) => {
            if ((job.data as { tenant?: string }).tenant === undefined) throw new Error('no tenant on this job');
            return (job.data as { tenant: string }).tenant;
          },
        }),
      );
      const big = await queue.add('big', { tenant: 'a', permits: 6 });
      const anonymous = await queue.add('anonymous', { permits: 1 });
      const fine = await queue.add('fine', { tenant: 'a', permits: 1 });
      await until(() => failed.length === 2);
      expect(failed).toEqual([
        [big.id, expect.stringMatching(/asks more permits than rule .* can ever grant/)],
        [anonymous.id, 'no tenant on this job'],
      ]);
      await until(() => completed.includes(fine.id));
    });
    expect(unhandled).toEqual([]);
    expect(() =>
      rateLimitedProcessor(async () => 1, { limiter: {} as never, queue: { rateLimit: async () => {} } }),
    ).toThrow(/rateLimitedProcessor: limiter must be a sluice Limiter/);
    expect(() =>
      rateLimitedProcessor(async () => 1, {
        limiter: createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1 }) }),
        queue: {} as never,
      }),
    ).toThrow(/queue must be the worker's BullMQ Queue/);
  });
});

describe('rateLimitedProcessor (BullMQ): one tenant refused, the others run on', () => {
  /**
   * Jobs of tenants a and b, interleaved; a is refused for an hour (a ban, a deny-list entry with an expiry)
   * or at its own limit. a's refused jobs wait in BullMQ's delayed set, not failed; b's run, in the order
   * added; the queue is never rate-limited (it once was, for the ban's 24 h, for every tenant).
   */
  async function run(
    refuse: (limiter: ReturnType<typeof createLimiter>) => Promise<void>,
    on: 'memory' | 'redis' = 'memory',
    rule: Algorithm = fixedWindow({ limit: 100, windowMs: HOUR, name: 'per-tenant' }),
  ) {
    const store = on === 'memory' ? memoryStore() : redisStore({ redis: testRedis().redis, timeoutMs: 5_000 });
    const limiter = createLimiter({ rules: rule, store, prefix: `bullmq-tenants-${process.pid}-${queues}` });
    closers.push(() => limiter.close());
    await refuse(limiter);
    const limited: string[] = [];
    const ran: string[] = [];
    const { queue, worker, failed } = queueWith((queue) =>
      rateLimitedProcessor(
        async (job: Job<Tenant>) => {
          ran.push(job.id as string);
        },
        {
          limiter,
          queue,
          key: (job: Job<Tenant>) => job.data.tenant,
          onLimited: (_decision, job) => limited.push(job.id as string),
        },
      ),
    );
    const tenants = ['a', 'b', 'a', 'b', 'b', 'a', 'b'];
    const jobs = await queue.addBulk(tenants.map((tenant) => ({ name: 'send', data: { tenant } })));
    const of = (tenant: string) => jobs.filter((job) => job.data.tenant === tenant).map((job) => job.id as string);
    const bDone = completedAll(worker, of('b'));
    return { queue, worker, failed, limited, ran, of, bDone, limiter };
  }

  it.each([
    ['banned for an hour', 'memory', (l: ReturnType<typeof createLimiter>) => l.block('a', HOUR)],
    ['denied for an hour', 'memory', (l: ReturnType<typeof createLimiter>) => l.deny('a', { ttlMs: HOUR })],
    ['banned for an hour', 'redis', (l: ReturnType<typeof createLimiter>) => l.block('a', HOUR)],
    ['denied for an hour', 'redis', (l: ReturnType<typeof createLimiter>) => l.deny('a', { ttlMs: HOUR })],
  ] as const)(
    "tenant a %s (limiter on %s): b's jobs all run, a's wait delayed about an hour, none failed, the queue not held",
    async (_, on, refuse) => {
      const { queue, failed, limited, ran, of, bDone } = await run(refuse, on);
      await bDone;
      expect(ran).toEqual(of('b'));
      // a's three were refused before b's last ran (one worker, one job at a time): each is in the delayed set.
      expect(limited).toEqual(of('a'));
      for (const id of of('a')) {
        const job = await queue.getJob(id);
        expect(await job?.getState()).toBe('delayed');
        expect(job?.delay).toBeGreaterThan(HOUR - 60_000);
      }
      expect(failed).toEqual([]);
      expect(await queue.getRateLimitTtl()).toBeLessThanOrEqual(0);
    },
  );

  it("a ban that ends: a's delayed jobs come back and run once it is over, none failed", async () => {
    const { failed, ran, of, bDone, worker } = await run((l) => l.block('a', 300));
    const aDone = completedAll(worker, of('a'));
    await bDone;
    await aDone;
    expect(ran.filter((id) => of('a').includes(id)).sort()).toEqual([...of('a')].sort());
    expect(failed).toEqual([]);
  });

  it("tenant a at its own limit: its job past the limit waits delayed for its refill; b's run on", async () => {
    // 4 a tenant, refilled at 4 an hour: a has used 2, so its first two jobs run and the third waits 15 min.
    const bucket = tokenBucket({ capacity: 4, refillPerSecond: 4 / 3_600, name: 'per-tenant' });
    const { queue, failed, limited, ran, of, bDone } = await run(
      async (l) => {
        await l.tryAcquire('a', { permits: 2 });
      },
      'memory',
      bucket,
    );
    await bDone;
    const [a1, a2, a3] = of('a');
    expect(ran.filter((id) => of('b').includes(id))).toEqual(of('b'));
    expect(ran).toContain(a1);
    expect(ran).toContain(a2);
    expect(limited).toEqual([a3]);
    expect(await (await queue.getJob(a3 as string))?.getState()).toBe('delayed');
    expect(failed).toEqual([]);
    expect(await queue.getRateLimitTtl()).toBeLessThanOrEqual(0);
  });

  it("a rule every tenant shares (key: 'global') holds the whole queue: every job runs, in the order added, none delayed", async () => {
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 100, windowMs: HOUR, name: 'per-tenant' }),
        fixedWindow({ limit: 2, windowMs: 1_000, name: 'downstream', scope: 'global' }),
      ],
    });
    closers.push(() => limiter.close());
    const ran: string[] = [];
    const { queue, worker, failed } = queueWith((queue) =>
      rateLimitedProcessor(
        async (job: Job<Tenant>) => {
          ran.push(job.id as string);
        },
        { limiter, queue, key: (job: Job<Tenant>) => job.data.tenant },
      ),
    );
    const jobs = await queue.addBulk(['a', 'b', 'a', 'b', 'a'].map((tenant) => ({ name: 'send', data: { tenant } })));
    await completedAll(
      worker,
      jobs.map((job) => job.id),
    );
    expect(ran).toEqual(jobs.map((job) => job.id));
    expect(await queue.getDelayedCount()).toBe(0);
    expect(failed).toEqual([]);
  });
});

it('2 workers at concurrency 4, 5 jobs a second: every job runs once, none fails (the order is not promised)', async () => {
  const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000, name: 'downstream' }) });
  closers.push(() => limiter.close());
  const ran: string[] = [];
  const { queue, worker } = queueWith((queue) =>
    rateLimitedProcessor(
      async (job: Job) => {
        ran.push(job.id as string);
      },
      { limiter, queue },
    ),
  );
  const connection = new Redis(testRedis().server.url, { maxRetriesPerRequest: null });
  const second = new Worker(
    queue.name,
    rateLimitedProcessor(async (job: Job) => void ran.push(job.id as string), {
      limiter,
      queue,
    }),
    { connection, concurrency: 4 },
  );
  worker.concurrency = 4;
  const failed: string[] = [];
  for (const w of [worker, second]) w.on('failed', (job) => failed.push(job?.id as string));
  closers.push(
    async () => connection.quit(),
    async () => second.close(),
  );
  const added = await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'send', data: { i } })));
  const ids = added.map((job) => job.id as string);
  const done = new Set<string>();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${done.size} of 20 completed within 30 s`)), 30_000);
    for (const w of [worker, second])
      w.on('completed', (job: Job) => {
        done.add(job.id as string);
        if (done.size < 20) return;
        clearTimeout(timer);
        resolve();
      });
  });
  expect([...ran].sort()).toEqual([...ids].sort());
  expect(ran).toHaveLength(20);
  expect(failed).toEqual([]);
  const outOfPlace = ran.filter((id, i) => id !== ids[i]).length;
  console.info(`2 workers x 4: ${outOfPlace} of 20 jobs ran out of the order added (${ran.join(' ')})`);
});
