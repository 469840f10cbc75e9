/**
 * A refund goes only where its grant was counted. A grant failMode 'open' made while Redis stalled is never
 * counted on Redis: refunding it there (after-response accounting, limiter.refund) once handed out up to a
 * bucket's capacity extra per key after every outage (token bucket of 3, no refill: 3 granted, a stall with
 * 2 fail-open grants that failed, then 2 more granted). failMode 'local' charges its grants to Redis on the
 * return, so their refunds go there, and never twice. And a request never gives back more than it took.
 */
import { type Decision, createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { leasedLimiterOn } from '../harness/hybrid.js';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestRedis, startTestRedis } from '../harness/redis-server.js';
import { Answer, get, startServer } from '../http/servers.js';
import { nextEvent } from '../harness/events.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let n = 0;
const prefix = () => `refund-origin-${process.pid}-${n++}`;

/** A Redis of its own, a client with a short deadline's store, and a way to stall it (SIGSTOP) and wait for it back. */
async function stallable(failMode: 'open' | 'local') {
  const server: TestRedis = await startTestRedis();
  const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  const store = redisStore({ redis: client, failMode, timeoutMs: 50 });
  cleanups.push(async () => {
    await store.close();
    client.disconnect();
    await server.stop();
  });
  // 'local' also charges its grants to Redis on the return (fallback-charged); 'open' counted them nowhere.
  const recovered = () =>
    failMode === 'local'
      ? nextEvent(store, 'fallback-charged').then(() => undefined)
      : new Promise<void>((resolve) => store.once('store-recovered', () => resolve()));
  // 'local' holds this node's share of each limit: the whole of it here, once Redis has counted a fleet of one.
  const counted = failMode === 'local' ? nextEvent(store, 'fleet') : Promise.resolve();
  return {
    store,
    counted,
    client,
    stall: () => server.process?.kill('SIGSTOP'),
    resume: () => server.process?.kill('SIGCONT'),
    recovered,
  };
}

/** A bucket of 3 that never refills within a test. */
const bucket = () => tokenBucket({ capacity: 3, refillPerSecond: 0.000_001, name: 'tb' });

describe.each(['open', 'local'] as const)("exact mode, failMode '%s'", (failMode) => {
  // 'open' grants past an empty bucket; 'local' starts from what Redis last said was left, so it is left 2.
  const onRedis = failMode === 'open' ? 3 : 1;
  it('limiter.refund({ decision }) of a fail-mode grant never gives permits back on Redis', async () => {
    const redis = await stallable(failMode);
    const limiter = createLimiter({ rules: bucket(), store: redis.store, prefix: prefix() });
    for (let i = 0; i < onRedis; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    await redis.counted;
    redis.stall();
    const during: Decision[] = [];
    for (let i = 0; i < 2; i++) during.push(await limiter.tryAcquire('k'));
    expect(during.map((d) => [d.allowed, d.source])).toEqual([
      [true, 'fallback'],
      [true, 'fallback'],
    ]);
    const back = redis.recovered();
    redis.resume();
    await back;
    // The requests failed: their grants are given back, after Redis answered again: 'open' never counted them
    // anywhere (nothing goes to Redis); 'local' charged them to Redis on its return, so they go back there.
    for (const decision of during) await limiter.refund('k', 1, { decision });
    const after = await limiter.tryAcquire('k');
    expect(after.allowed).toBe(failMode === 'local');
    expect(after.source).toBeUndefined();
    expect(after.remaining).toBe(failMode === 'local' ? 1 : 0);
  });

  it('after-response accounting (skipFailedRequests) sends a fail-mode grant back to the fail mode only', async () => {
    const redis = await stallable(failMode);
    const limiter = createLimiter({ rules: bucket(), store: redis.store, prefix: prefix() });
    let answered = 0;
    let release: () => void = () => {};
    const recoveredThenFail = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server = await startServer(
      'node:http',
      { limiter, key: () => 'k', skipFailedRequests: true } as never,
      async () => {
        answered++;
        // The stalled requests answer 500 once Redis is back: their refunds run against a healthy Redis.
        if (answered > onRedis) await recoveredThenFail;
        return new Answer(answered > onRedis ? 500 : 200, { answered });
      },
    );
    cleanups.push(() => server.close());
    for (let i = 0; i < onRedis; i++) expect((await get(server.url)).status).toBe(200);
    await redis.counted;
    redis.stall();
    const failing = [get(server.url), get(server.url)];
    // Both are past their decision (made by the fail mode) once the route has seen them.
    while (answered < onRedis + 2) await new Promise((resolve) => setImmediate(resolve));
    const back = redis.recovered();
    redis.resume();
    await back;
    release();
    expect((await Promise.all(failing)).map((r) => r.status)).toEqual([500, 500]);
    // Wait for both settlements to have reached the store: a peek goes through Redis after them.
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 'local': charged to Redis on the return and given back there: 1 used of 3.
    if (failMode === 'local') {
      expect((await limiter.peek('k')).remaining).toBe(2);
      return;
    }
    expect((await get(server.url)).status).toBe(429);
    expect((await limiter.peek('k')).remaining).toBe(0);
  });
});

it("exact mode, failMode 'local': the fail mode's own state takes its grant back", async () => {
  const redis = await stallable('local');
  const limiter = createLimiter({
    rules: fixedWindow({ limit: 2, windowMs: 600_000, name: 'w' }),
    store: redis.store,
    prefix: prefix(),
  });
  await redis.counted;
  redis.stall();
  const first = await limiter.tryAcquire('k');
  const second = await limiter.tryAcquire('k');
  expect([first.source, second.source]).toEqual(['fallback', 'fallback']);
  expect((await limiter.tryAcquire('k')).allowed).toBe(false);
  await limiter.refund('k', 1, { decision: second });
  // Given back locally: the fail mode grants one more while Redis stays away.
  expect((await limiter.tryAcquire('k')).allowed).toBe(true);
  const back = redis.recovered();
  redis.resume();
  await back;
  // The first stalled call was on the wire: Redis ran it once it resumed (counting one, never more); the fail
  // mode's other net grant (the fourth: the second was refunded locally) was charged on the return. Two of
  // two used: a refund sent to Redis, or a charge of the refunded grant, would have left 1 or -1.
  expect((await limiter.peek('k')).remaining).toBe(0);
});

it("exact mode, failMode 'local', per-rule permits: each rule is charged its own count on the return, a refund its own", async () => {
  const redis = await stallable('local');
  const limiter = createLimiter({
    rules: [
      fixedWindow({ limit: 10, windowMs: 600_000, name: 'rpm' }),
      fixedWindow({ limit: 1_000, windowMs: 600_000, name: 'tpm' }),
    ],
    store: redis.store,
    prefix: prefix(),
  });
  await redis.counted;
  // Counted on Redis first, so the fail mode starts from a key it has seen.
  expect(await limiter.tryAcquire('k', { permits: { rpm: 1, tpm: 100 } })).toMatchObject({ allowed: true });
  redis.stall();
  const granted = [];
  for (let i = 0; i < 3; i++) granted.push(await limiter.tryAcquire('k', { permits: { rpm: 1, tpm: 200 } }));
  expect(granted.map((d) => [d.source, d.allowed])).toEqual([
    ['fallback', true],
    ['fallback', true],
    ['fallback', true],
  ]);
  // The real count of the last call was 50 tokens: 150 back to the fail mode's own state, never to Redis.
  await limiter.refund('k', { tpm: 150 }, { decision: granted[2] as Decision });
  const back = redis.recovered();
  redis.resume();
  await back;
  // On Redis: the first call (1, 100); the first stalled call was on the wire and ran once Redis resumed
  // (1, 200); the fail mode's two other net grants charged on the return (2, 200 + 50).
  const peeked = await limiter.peek('k');
  expect(peeked.rules?.map((r) => 'remaining' in r && r.remaining)).toEqual([10 - 4, 1_000 - 550]);
});

it('leased mode: a fail-mode grant is never given back to the central bucket', async () => {
  const redis = await stallable('open');
  const limiter = leasedLimiterOn({
    rules: bucket(),
    redis: redis.client,
    prefix: prefix(),
    failMode: 'open',
    timeoutMs: 50,
  });
  cleanups.push(() => limiter.close());
  for (let i = 0; i < 3; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
  redis.stall();
  const during: Decision[] = [];
  for (let i = 0; i < 2; i++) during.push(await limiter.tryAcquire('k'));
  expect(during.every((d) => d.allowed && d.source === 'fallback')).toBe(true);
  redis.resume();
  // Back when a lease call answers again: the bucket is empty, so the answer is a denial from Redis's count.
  let after: Decision | undefined;
  for (let i = 0; i < 400; i++) {
    after = await limiter.tryAcquire('k');
    if (after.source === undefined) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (const decision of during) await limiter.refund('k', 1, { decision });
  expect((await limiter.tryAcquire('k')).allowed).toBe(false);
});

describe('a request never gives back more than it took', () => {
  it('permitsAfterResponse -1001 for a request charged 1: 10 requests in a window of 5 pass 5, the excess is reported', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 600_000 }) });
    const reported: Error[] = [];
    const server = await startServer('node:http', {
      limiter,
      key: () => 'k',
      permitsAfterResponse: () => -1001,
      onAccountingError: (error: Error) => reported.push(error),
    } as never);
    cleanups.push(() => server.close());
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push((await get(server.url)).status);
      // Each response is settled before the next request is decided.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // Each gives back its own permit: every request passes, but the window never holds more than 5 at once.
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect((await limiter.peek('k')).remaining).toBe(5);
    expect(reported.length).toBe(10);
    expect(reported[0]?.message).toMatch(/gave back 1001 permits for a request charged 1: 1 given back/);
    // A burst of 10 at once cannot borrow the others' permits: 5 pass.
    const burst = await Promise.all(Array.from({ length: 10 }, () => limiter.tryAcquire('k')));
    expect(burst.filter((d) => d.allowed).length).toBe(5);
  });

  it('skipFailedRequests and a negative permitsAfterResponse together give back at most the charge', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 600_000 }) });
    const server = await startServer(
      'node:http',
      {
        limiter,
        key: () => 'k',
        permits: 2,
        skipFailedRequests: true,
        permitsAfterResponse: () => -2,
        onAccountingError: () => {},
      } as never,
      async () => new Answer(500, {}),
    );
    cleanups.push(() => server.close());
    await limiter.tryAcquire('k', { permits: 3 });
    expect((await get(server.url)).status).toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // 3 taken directly, 2 by the request and 2 given back (not 4): 2 left.
    expect((await limiter.peek('k')).remaining).toBe(2);
  });
});
