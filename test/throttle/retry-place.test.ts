/**
 * A throttled call a provider refused (429) is sent again in its place: its turn is asked at the head of its
 * priority (KEEPS_PLACE, a half step above it), ahead of the calls of its priority that came after it and
 * behind those of a higher one. It once went to the back of the queue (one call waited 64 s behind the
 * others). Checked on the queue itself, in one process and across two sharing the store's queue (the memory
 * store, and Redis: semaphore.lua's places), and through throttle.fetch on Redis.
 */
import {
  type ConcurrencyAcquireOptions,
  type Slot,
  concurrencyLimiter,
  createLimiter,
  fixedWindow,
  memoryStore,
  throttle,
} from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { heldProvider } from '@sluice/test-kit';
import { describe, expect, it } from 'vitest';
import { KEEPS_PLACE, type KeepsPlace } from '../../packages/core/src/engine/semaphore-store.js';
import { useTestRedis } from '../harness/use-redis.js';
import { closeAfterEach } from '../harness/closers.js';

const testRedis = useTestRedis();
const closers = closeAfterEach();
let n = 0;

/** Yields to the event loop until `done()` (bounded in count: each turn is a store's answer or none). */
async function until(done: () => boolean, turns = 100_000): Promise<void> {
  for (let i = 0; !done(); i++) {
    if (i >= turns) throw new Error(`not reached within ${turns} turns`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const storeOf = (kind: 'memory' | 'redis') =>
  kind === 'memory' ? memoryStore() : redisStore({ redis: testRedis().redis, timeoutMs: 5_000 });

describe.each(['memory', 'redis'] as const)('on the %s store', (kind) => {
  it.each([
    ['in one process', false],
    ['from a second process sharing the queue', true],
  ] as const)('a caller back for its turn waits ahead of its priority, behind a higher one (%s)', async (_, apart) => {
    const store = storeOf(kind);
    const prefix = `retry-place-${process.pid}-${n++}`;
    const here = concurrencyLimiter({ max: 1, store, prefix });
    const there = apart ? concurrencyLimiter({ max: 1, store, prefix }) : here;
    closers.push(
      () => store.close(),
      () => here.close(),
      () => there.close(),
    );
    const holder = await here.acquire('k');
    const order: string[] = [];
    const take = (name: string, slot: Promise<Slot>) =>
      slot.then((s) => {
        order.push(name);
        return s.release();
      });
    const waiting = [
      take('w1', here.acquire('k')),
      take('w2', here.acquire('k')),
      take('high', here.acquire('k', { priority: 1 })),
    ];
    await until(() => here.waiting('k') === 3);
    const back: ConcurrencyAcquireOptions & KeepsPlace = { priority: 0, [KEEPS_PLACE]: true };
    waiting.push(take('back', there.acquire('k', back)));
    await until(() => here.waiting('k') + (apart ? there.waiting('k') : 0) === 4);
    await holder.release();
    await Promise.all(waiting);
    expect(order).toEqual(['high', 'back', 'w1', 'w2']);
  });
});

it('throttle.fetch on Redis: the refused call is sent again before the calls that came while it was out', async () => {
  const store = redisStore({ redis: testRedis().redis, timeoutMs: 5_000 });
  const limiter = createLimiter({
    rules: fixedWindow({ limit: 1, windowMs: 500 }),
    store,
    prefix: `retry-place-fetch-${process.pid}-${n++}`,
  });
  const { fetch, started, firstSent, answerFirst: refuse } = heldProvider();
  const t = throttle({ limiter, fetch, minPauseMs: 100 });
  closers.push(
    () => limiter.close(),
    () => t.close(),
  );
  const r = t.fetch('http://provider.test/v1/chat');
  await firstSent;
  const calls = ['c1', 'c2', 'c3'].map((name) => t.run(() => void started.push(name)));
  await until(() => t.queued() === 3);
  refuse(new Response('slow down', { status: 429, headers: { 'retry-after': '0' } }));
  await Promise.all([r, ...calls]);
  // c1 may have started before the refusal came (a window passed); r is never behind c2 and c3.
  expect(started.indexOf('r', 1)).toBeLessThan(started.indexOf('c2'));
  expect(started.slice(-2)).toEqual(['c2', 'c3']);
});
