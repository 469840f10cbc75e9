import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../foundation/clock.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { memoryStore } from '../engine/memory-store.js';
import { type Slot, concurrencyLimiter } from './concurrency-limiter.js';

/** Lets queued microtasks (grants, wake-ups) run. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('concurrencyLimiter in one process', () => {
  it('never more than max inside at once; every caller gets in, first come first served (property, ManualClock)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(
          fc.record({
            arriveMs: fc.integer({ min: 0, max: 50 }),
            holdMs: fc.integer({ min: 1, max: 40 }),
            key: fc.constantFrom('a', 'b'),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (max, jobs) => {
          const clock = new ManualClock(0);
          const limiter = concurrencyLimiter({ max, clock });
          const inside = new Map<string, number>();
          let worst = 0;
          const entered: Array<{ key: string; index: number }> = [];
          const order = jobs
            .map((job, index) => ({ ...job, index }))
            .sort((x, y) => x.arriveMs - y.arriveMs || x.index - y.index);
          const runs: Promise<void>[] = [];
          let finished = 0;
          let now = 0;
          for (const job of order) {
            clock.advance(job.arriveMs - now);
            now = job.arriveMs;
            runs.push(
              limiter
                .run(job.key, async () => {
                  entered.push({ key: job.key, index: job.index });
                  inside.set(job.key, (inside.get(job.key) ?? 0) + 1);
                  worst = Math.max(worst, inside.get(job.key) ?? 0);
                  await clock.sleep(job.holdMs);
                  inside.set(job.key, (inside.get(job.key) ?? 0) - 1);
                })
                .then(() => {
                  finished++;
                }),
            );
            await settle();
          }
          for (let t = 0; t < 40 * jobs.length && finished < jobs.length; t++) {
            clock.advance(1);
            await settle();
          }
          await Promise.all(runs);
          expect(worst).toBeLessThanOrEqual(max);
          expect(entered).toHaveLength(jobs.length);
          // First come, first served per key: entry order is arrival order.
          for (const key of ['a', 'b']) {
            const arrivals = order.filter((j) => j.key === key).map((j) => j.index);
            expect(entered.filter((e) => e.key === key).map((e) => e.index)).toEqual(arrivals);
          }
          await limiter.close();
        },
      ),
      { numRuns: 100 },
    );
  });

  it('tryAcquire takes a free slot but never one ahead of a waiting caller', async () => {
    const limiter = concurrencyLimiter({ max: 1 });
    const first = (await limiter.tryAcquire('k')) as Slot;
    expect(first).toBeDefined();
    expect(await limiter.tryAcquire('k')).toBeUndefined();
    const waiting = limiter.acquire('k');
    await first.release();
    // The freed slot belongs to the waiter, even if a try comes first.
    expect(await limiter.tryAcquire('k')).toBeUndefined();
    const second = await waiting;
    expect(second.key).toBe('k');
    await second.release();
    expect(await limiter.tryAcquire('k')).toBeDefined();
    await limiter.close();
  });

  it('run releases the slot however fn settles, and passes its result or error through', async () => {
    const limiter = concurrencyLimiter({ max: 1 });
    expect(await limiter.run('k', () => 42)).toBe(42);
    await expect(
      limiter.run('k', async () => {
        throw new Error('job failed');
      }),
    ).rejects.toThrow('job failed');
    const slot = (await limiter.tryAcquire('k')) as Slot;
    expect(slot).toBeDefined();
    await slot.release();
    await limiter.close();
  });

  it('a slot signal aborts on release; releasing twice does nothing and never frees another holder', async () => {
    const limiter = concurrencyLimiter({ max: 1 });
    const slot = await limiter.acquire('k');
    expect(slot.signal.aborted).toBe(false);
    await slot.release();
    expect(slot.signal.aborted).toBe(true);
    const next = await limiter.acquire('k');
    await slot.release(); // a no-op: `next` keeps its slot
    expect(await limiter.tryAcquire('k')).toBeUndefined();
    await next.release();
    await limiter.close();
  });

  it('timeouts, aborts, a full queue and close reject with typed errors; a caller that gave up takes no slot', async () => {
    const clock = new ManualClock(0);
    const limiter = concurrencyLimiter({ max: 1, maxQueue: 2, clock });
    const holder = await limiter.acquire('k');
    const timedOut = limiter.acquire('k', { maxWaitMs: 100 });
    const aborted = new AbortController();
    const abortedCall = limiter.acquire('k', { signal: aborted.signal });
    await expect(limiter.acquire('k')).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    await expect(limiter.acquire('k', { maxWaitMs: 0 })).rejects.toMatchObject({ code: 'WAIT_EXPIRED' });
    clock.advance(100);
    await expect(timedOut).rejects.toMatchObject({ code: 'WAIT_EXPIRED' });
    aborted.abort();
    await expect(abortedCall).rejects.toMatchObject({ code: 'ABORTED' });
    const closing = limiter.acquire('k');
    await holder.release();
    const last = await closing;
    const waiter = limiter.acquire('k');
    await limiter.close();
    await expect(waiter).rejects.toMatchObject({ code: 'CLOSED' });
    expect(last.signal.aborted).toBe(true); // close released it
    await expect(limiter.acquire('k')).rejects.toBeInstanceOf(SluiceError);
  });

  it('memory is bounded by what is in flight: 200,000 keys acquired and released leave nothing behind', async () => {
    const store = memoryStore();
    const limiter = concurrencyLimiter({ max: 2, store });
    const held: Slot[] = [];
    for (let i = 0; i < 200_000; i++) {
      const slot = await limiter.acquire(`k${i}`);
      if (i % 1_000 === 0) held.push(slot);
      else await slot.release();
    }
    expect(store.slotKeys).toBe(200);
    for (const slot of held) await slot.release();
    expect(store.slotKeys).toBe(0);
    await limiter.close();
    // 400,000 awaited calls: about 5 s on a loaded 2-core machine, past vitest's default timeout.
  }, 30_000);

  it('bad input: max, leaseMs, maxQueue, keys, timeouts, fn: typed errors, nothing taken', async () => {
    for (const max of [0, -1, 1.5, Number.NaN, Infinity])
      expect(() => concurrencyLimiter({ max })).toThrow(SluiceRangeError);
    expect(() => concurrencyLimiter({ max: '3' as never })).toThrow(SluiceTypeError);
    expect(() => concurrencyLimiter({ max: 1, leaseMs: 50 })).toThrow(/leaseMs must be at least 100/);
    expect(() => concurrencyLimiter({ max: 1, maxQueue: 0 })).toThrow(SluiceRangeError);
    expect(() => concurrencyLimiter({ max: 1, store: {} as never })).toThrow(SluiceTypeError);
    expect(() => concurrencyLimiter(undefined as never)).toThrow(SluiceTypeError);
    const limiter = concurrencyLimiter({ max: 1 });
    await expect(limiter.acquire('')).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.acquire('k', { maxWaitMs: -1 })).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.acquire('k', { signal: 'stop' as never })).rejects.toBeInstanceOf(SluiceTypeError);
    await expect(limiter.run('k', 'job' as never)).rejects.toBeInstanceOf(SluiceTypeError);
    expect(await limiter.tryAcquire('k')).toBeDefined(); // nothing was taken by the refused calls
    await limiter.close();
  });
});
