/**
 * A BullMQ worker that slows down to a downstream's limit (4 jobs a second) without failing or reordering a
 * job: 12 jobs are added at once; each runs when the limiter admits it, the rest wait at the head of the queue
 * through BullMQ's own rate limit. Prints the jobs run each second, then exits.
 *
 *   REDIS_URL=redis://127.0.0.1:6380 npx tsx examples/beyond-http/src/bullmq.ts   (or a throwaway redis-server)
 */
import { redisForExample } from '@sluice/example-multi-node/redis-for-example';
import { createLimiter, fixedWindow } from '@sluice/core';
import { rateLimitedProcessor } from '@sluice/core/bullmq';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

const server = await redisForExample();
const connection = new Redis(server.url, { maxRetriesPerRequest: null });
const name = `mail-${Date.now()}`;
const queue = new Queue(name, { connection });
const limiter = createLimiter({ rules: fixedWindow({ limit: 4, windowMs: 1_000, name: 'smtp' }) });

// Seconds counted as the limiter counts them: aligned to the clock, from the one the run starts in.
const firstSecond = Math.floor(Date.now() / 1000);
const ran: { id: string; second: number }[] = [];
let held = 0;
const send = async (job: Job<{ to: string }>) => {
  ran.push({ id: job.id as string, second: Math.floor(Date.now() / 1000) - firstSecond });
};
const worker = new Worker(name, rateLimitedProcessor(send, { limiter, queue, onLimited: () => held++ }), {
  connection,
  concurrency: 1,
});
let failed = 0;
worker.on('failed', () => failed++);

const added = await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'mail', data: { to: `user${i}` } })));
await new Promise<void>((resolve) => {
  const check = setInterval(() => {
    if (ran.length < added.length) return;
    clearInterval(check);
    resolve();
  }, 20);
});
const bySecond = new Map<number, string[]>();
for (const r of ran) bySecond.set(r.second, [...(bySecond.get(r.second) ?? []), r.id]);
for (const [second, ids] of bySecond) console.log(`second ${second}: ${ids.length} jobs (${ids.join(', ')})`);
const inOrder = ran.every((r, i) => r.id === added[i]?.id);
console.log(`12 jobs, ${failed} failed, ${held} held back and run later, in the order added: ${inOrder}`);
await worker.close();
await queue.close();
await limiter.close();
connection.disconnect();
server.stop();
