/**
 * The HTTP middleware on real node:http, Express and Fastify servers, over real HTTP: limits, headers,
 * store faults and bad input.
 */
import {
  ManualClock,
  SluiceRangeError,
  SluiceTypeError,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import { rateLimit } from '@sluice/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, frameworks, get, startServer } from './servers.js';
import type { AnyRequestKey } from '../../packages/core/src/adapters/http/keys.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** The x-user header, read through the view every adapter passes: one key function for all six frameworks. */
const userKey: AnyRequestKey = (_req, view) => {
  const id = view?.header('x-user');
  return id === undefined || id === '' ? undefined : `user:${id}`;
};

/** The seed's per-user policy, first two rules, on a ManualClock 3 s into a 10 s window. */
function apiPolicy() {
  const clock = new ManualClock(3_000);
  const limiter = createLimiter({
    rules: [
      fixedWindow({ limit: 200, windowMs: 10_000, name: 'per-10s' }),
      fixedWindow({ limit: 5_000, windowMs: 3_600_000, name: 'per-hour' }),
    ],
    store: memoryStore({ clock }),
  });
  return { clock, limiter };
}

describe.each(frameworks)('rateLimit on %s', (framework) => {
  async function serve(options: Parameters<typeof rateLimit>[0]): Promise<string> {
    const server = await startServer(framework, options as never);
    servers.push(server);
    return server.url;
  }

  it('allows 200 in 10 s with exact remaining counts, answers the 201st 429 with Retry-After and RateLimit headers', async () => {
    const { clock, limiter } = apiPolicy();
    const url = await serve({ limiter, key: userKey as never });
    for (let i = 1; i <= 200; i++) {
      const r = await get(url, { 'x-user': 'alice' });
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit')).toBe(`"per-10s";r=${200 - i};t=7, "per-hour";r=${5000 - i};t=3597`);
      expect(r.headers.get('retry-after')).toBeNull();
    }
    const denied = await get(url, { 'x-user': 'alice' });
    expect(denied.status).toBe(429);
    expect(denied.headers.get('retry-after')).toBe('7');
    expect(denied.headers.get('ratelimit-policy')).toBe('"per-10s";q=200;w=10, "per-hour";q=5000;w=3600');
    expect(denied.headers.get('ratelimit')).toBe('"per-10s";r=0;t=7, "per-hour";r=4800;t=3597');
    expect(denied.headers.get('content-type')).toMatch(/^application\/json/);
    expect(denied.body).toEqual({ error: 'Too Many Requests', rule: 'per-10s', limit: 200, retryAfterSeconds: 7 });
    // Another user has their own budget; alice's comes back when the window turns, as Retry-After said.
    expect((await get(url, { 'x-user': 'bob' })).status).toBe(200);
    clock.advance(6_999);
    expect((await get(url, { 'x-user': 'alice' })).status).toBe(429);
    clock.advance(1);
    const back = await get(url, { 'x-user': 'alice' });
    expect(back.status).toBe(200);
    expect(back.headers.get('ratelimit')).toBe('"per-10s";r=199;t=10, "per-hour";r=4799;t=3590');
  });

  it('sends draft-6 headers, or none but Retry-After with headers: false', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 2, refillPerSecond: 0.5 }),
      store: memoryStore({ clock }),
    });
    const url = await serve({ limiter, key: () => 'k', headers: 'draft-6' });
    const first = await get(url);
    expect([
      first.headers.get('ratelimit-limit'),
      first.headers.get('ratelimit-remaining'),
      first.headers.get('ratelimit-reset'),
    ]).toEqual(['2', '1', '2']);
    expect(first.headers.get('ratelimit-policy')).toBe('2;w=4');
    expect(first.headers.get('ratelimit')).toBeNull();
    await get(url);
    const denied = await get(url);
    expect(denied.status).toBe(429);
    expect(denied.headers.get('retry-after')).toBe('2');
    expect(denied.headers.get('ratelimit-remaining')).toBe('0');

    const quiet = await serve({ limiter, key: () => 'k', headers: false });
    const r = await get(quiet);
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(r.headers.get('ratelimit-limit')).toBeNull();
    expect(r.headers.get('ratelimit')).toBeNull();
  });

  it('falls back to the client address when the key is missing, never one bucket for everyone', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      store: memoryStore({ clock }),
    });
    const url = await serve({ limiter, key: userKey as never });
    expect((await get(url)).status).toBe(200); // anonymous: keyed by 127.0.0.1
    expect((await get(url)).status).toBe(429);
    expect((await get(url, { 'x-user': 'carol' })).status).toBe(200); // a signed-in user is not in the address's bucket
    expect((await limiter.peek('ip:127.0.0.1')).remaining).toBe(0);
    expect((await limiter.peek('user:carol')).remaining).toBe(0);
    expect((await limiter.peek('user:')).remaining).toBe(1);
  });

  it("onMissingKey 'reject' answers 400 and 'skip' lets the request through, both consuming nothing", async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }) });
    const reject = await serve({ limiter, key: userKey as never, onMissingKey: 'reject' });
    const r = await get(reject);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'Bad Request', message: 'the request has no rate-limit key' });
    const skip = await serve({ limiter, key: () => '', onMissingKey: 'skip' });
    const s = await get(skip);
    expect(s.status).toBe(200);
    expect(s.headers.get('ratelimit')).toBeNull();
    expect((await limiter.peek('ip:127.0.0.1')).remaining).toBe(1);
  });

  it('answers invalid permits 400 and tells the developer; permits above the limit are a 429 without Retry-After', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }) });
    const reported: unknown[] = [];
    for (const permits of [Number.NaN, -1, 0.5, 2 ** 53 + 1, Number.POSITIVE_INFINITY, '3']) {
      const url = await serve({
        limiter,
        key: () => 'k',
        permits: () => permits as number,
        onInvalidInput: (e) => reported.push(e),
      });
      const r = await get(url);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: 'Bad Request', message: "the request's rate-limit permits are invalid" });
    }
    expect(reported).toHaveLength(6);
    expect(
      reported.every(
        (e) => (e instanceof SluiceRangeError || e instanceof SluiceTypeError) && e.argument === 'permits',
      ),
    ).toBe(true);
    const huge = await serve({ limiter, key: () => 'k', permits: () => 1_000_000 });
    const r = await get(huge);
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBeNull();
    expect(r.body).toMatchObject({ retryAfterSeconds: null });
    expect((await limiter.peek('k')).remaining).toBe(10);
  });

  it('shadow mode: never a 429; a request the rules would deny gets the headers it would have got, and consumes nothing', async () => {
    const clock = new ManualClock(3_000);
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 10_000, name: 'w' }),
      store: memoryStore({ clock }),
      shadow: true,
    });
    const url = await serve({ limiter, key: () => 'k' });
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await get(url));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(replies.map((r) => r.headers.get('ratelimit'))).toEqual([
      '"w";r=1;t=7',
      '"w";r=0;t=7',
      '"w";r=0;t=7',
      '"w";r=0;t=7',
    ]);
    expect(replies.map((r) => r.headers.get('retry-after'))).toEqual([null, null, '7', '7']);
    expect((await limiter.peek('k')).remaining).toBe(0);
  });

  it('routes a fault in the key function to the framework (500), not an unhandled rejection', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }) });
    const url = await serve({
      limiter,
      key: () => {
        throw new Error('auth service down');
      },
    });
    expect((await get(url)).status).toBe(500);
    const closed = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }) });
    await closed.close();
    expect((await get(await serve({ limiter: closed, key: () => 'k' }))).status).toBe(500);
  });
});

describe('rateLimit options', () => {
  const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }) });
  it.each([
    [{ limiter: {} }, SluiceTypeError, 'limiter'],
    [{ limiter, key: 'ip' }, SluiceTypeError, 'key'],
    [{ limiter, permits: 0 }, SluiceRangeError, 'permits'],
    [{ limiter, permits: Number.NaN }, SluiceRangeError, 'permits'],
    [{ limiter, headers: 'draft-7' }, SluiceRangeError, 'headers'],
    [{ limiter, onMissingKey: 'shared' }, SluiceRangeError, 'onMissingKey'],
    [{ limiter, maxWaitMs: -1 }, SluiceRangeError, 'maxWaitMs'],
    [{ limiter, limitedResponse: 'x' }, SluiceTypeError, 'limitedResponse'],
  ])('rejects %o', (options, type, argument) => {
    expect(() => rateLimit(options as never)).toThrow(type);
    try {
      rateLimit(options as never);
    } catch (error) {
      expect((error as SluiceTypeError).argument).toBe(argument);
    }
  });
});
