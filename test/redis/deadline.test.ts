/**
 * The per-decision deadline counts Redis's time, not this process's own stalls: an answer that arrived while
 * the event loop was blocked past the deadline (a long GC pause, synchronous work) is taken, where it was once
 * counted late and the decision answered by the fail mode (a healthy local Redis tripped the 50 ms default on
 * a loaded machine).
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { describe, expect, it } from 'vitest';
import { DeadlineError, deadlineCounts, withDeadline } from '../../packages/core/src/modes/deadline.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();

/** Blocks this process's event loop for `ms`. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy, as a long GC pause or synchronous work would be
  }
}

describe('the deadline of a Redis call', () => {
  it('an answer that arrived while this process stalled past the deadline is taken, not counted late', async () => {
    const { redis } = testRedis();
    await redis.ping();
    const answered = withDeadline(redis.ping(), 20, 'a ping');
    stall(100); // Redis (another process) answers at once; the deadline's timer is due too
    await expect(answered).resolves.toBe('PONG');
  });

  it("a decision asked just before a stall is Redis's, not the fail mode's", async () => {
    const store = redisStore({ redis: testRedis().redis, timeoutMs: 20, failMode: 'open' });
    const errors: Error[] = [];
    store.on('store-error', (e) => errors.push(e));
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 5, windowMs: 60_000 }),
      store,
      prefix: `stall-${process.pid}`,
    });
    await limiter.tryAcquire('warm');
    const decided = limiter.tryAcquire('k');
    stall(100);
    expect((await decided).source).toBeUndefined();
    expect(errors).toEqual([]);
    await limiter.close();
    await store.close();
  });

  it('a call answered just after a stall of this process (its answer queued behind the stall) is not counted late', async () => {
    // The answer needs one more turn of the loop after the stall, as a reply Redis could only send once this
    // busy machine let it run: the deadline's timer, late by the stall, gives the call another deadline.
    const answer = new Promise<string>((resolve) => setImmediate(() => setTimeout(() => resolve('answered'), 5)));
    const before = deadlineCounts();
    const waited = withDeadline(answer, 20, 'a call');
    stall(100);
    await expect(waited).resolves.toBe('answered');
    expect(deadlineCounts().extended).toBeGreaterThan(before.extended);
    expect(deadlineCounts().missed).toBe(before.missed);
  });

  it('however late this process runs, a call that never answers fails after at most 3 extensions', async () => {
    const before = deadlineCounts();
    const waited = withDeadline(new Promise(() => {}), 20, 'a call');
    let failed = false;
    waited.catch(() => {
      failed = true;
    });
    // The loop is late at every deadline (busy 30 ms at a time): each is extended, three times at most.
    while (!failed) {
      stall(30);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await expect(waited).rejects.toThrow(DeadlineError);
    expect(deadlineCounts().extended - before.extended).toBeLessThanOrEqual(3);
    expect(deadlineCounts().missed - before.missed).toBe(1);
  });

  it('a call that does not answer rejects with a DeadlineError naming it', async () => {
    await expect(withDeadline(new Promise(() => {}), 5, 'a decision')).rejects.toThrow(DeadlineError);
    await expect(withDeadline(new Promise(() => {}), 5, 'a decision')).rejects.toThrow(
      /a decision: Redis did not answer within 5 ms/,
    );
  });
});
