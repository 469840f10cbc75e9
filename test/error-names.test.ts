/**
 * Every error message names the function the user called: each public entry point, given a bad argument,
 * throws (or rejects with) a typed error whose message starts with that function's name, and consumes
 * nothing. One table for every package.
 */
import { ManualClock, RateLimiter, concurrencyLimiter, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { countLimit, rateLimited, smoothRateLimit } from '@sluice/core/decorators';
import { checkEngine, memoryEngine } from '@sluice/core/engine';
import { fetchRateLimit } from '@sluice/core/fetch';
import { honoRateLimit } from '@sluice/core/hono';
import { byIp, byUser, rateLimit, rateLimitHook } from '@sluice/core/http';
import { koaRateLimit } from '@sluice/core/koa';
import { byMetadata, grpcRateLimit } from '@sluice/grpc';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { instrumentSluice } from '@sluice/otel';
import { redisEngine, redisStore } from '@sluice/redis';
import { ALGORITHMS, ALGORITHM_KINDS } from '@sluice/test-kit';
import { describe, expect, it } from 'vitest';

const limiter = createLimiter({
  rules: fixedWindow({ limit: 5, windowMs: 60_000 }),
  store: memoryStore({ clock: new ManualClock(0) }),
});
const slots = concurrencyLimiter({ max: 1 });
const guava = RateLimiter.create(1);

const cases: [string, () => unknown][] = [
  // Every algorithm's factory (named as its kind): a size it refuses (each reads a limit, a window or a rate,
  // all 0 here), and a bad option every rule takes.
  ...ALGORITHM_KINDS.flatMap((kind): [string, () => unknown][] => [
    [kind, () => ALGORITHMS[kind].example({ limit: 0, windowMs: 0, perSecond: 0 })],
    [kind, () => ALGORITHMS[kind].example({ limit: 5, windowMs: 1_000, perSecond: 5 }, { name: 'has space' })],
  ]),
  ['createLimiter', () => createLimiter({ rules: 'fixed' as never })],
  ['memoryStore', () => memoryStore({ maxKeys: 0 })],
  ['tryAcquire', () => limiter.tryAcquire('k', { permits: 0 })],
  ['acquire', () => limiter.acquire('k', { permits: 1.5 })],
  ['peek', () => limiter.peek(42 as never)],
  ['reset', () => limiter.reset('')],
  ['refund', () => limiter.refund('k', -1)],
  ['penalize', () => limiter.penalize('k', Number.NaN)],
  ['block', () => limiter.block('k', 0)],
  ['unblock', () => limiter.unblock(undefined as never)],
  ['concurrencyLimiter', () => concurrencyLimiter({ max: 0 })],
  ['acquire', () => slots.acquire('k', { maxWaitMs: -1 })],
  ['tryAcquire', () => slots.tryAcquire('')],
  ['run', () => slots.run('k', 'not a function' as never)],
  ['RateLimiter.create', () => RateLimiter.create(0)],
  ['tryAcquire', () => guava.tryAcquire(0)],
  ['setRate', () => guava.setRate(-1)],
  ['rateLimited', () => rateLimited({ limiter: {} as never })],
  ['countLimit', () => countLimit({ limit: 0, windowMs: 1_000 })],
  ['smoothRateLimit', () => smoothRateLimit({ permitsPerSecond: 0 })],
  ['byIp', () => byIp({ trustProxy: -1 })],
  ['byMetadata', () => byMetadata('x-tenant', { maxKeyLength: 0 })],
  ['grpcRateLimit', () => grpcRateLimit({ limiter, methods: 3 as never })],
  ['byUser', () => byUser('user' as never)],
  ['rateLimit', () => rateLimit({ limiter: {} as never })],
  ['rateLimitHook', () => rateLimitHook(null as never)],
  ['fetchRateLimit', () => fetchRateLimit({ limiter, headers: 'draft-9' as never })],
  ['honoRateLimit', () => honoRateLimit({ limiter, key: 42 as never })],
  ['koaRateLimit', () => koaRateLimit(null as never)],
  ['redisStore', () => redisStore({ redis: {} as never })],
  ['redisEngine', () => redisEngine({ redis: {} as never })],
  ['leasedStore', () => leasedStore({ redis: {} as never })],
  ['dividedStore', () => dividedStore({ redis: {} as never })],
  ['instrumentSluice', () => instrumentSluice({ meterProvider: {} as never })],
  ['memoryEngine', () => memoryEngine({ clock: 5 as never })],
  ['checkEngine', () => checkEngine(memoryEngine(), { steps: 0 })],
  ['decide', () => memoryEngine().decide({ prefix: 'p', rules: [], states: [] }, [])],
  ['heartbeat', () => memoryEngine().heartbeat({} as never, undefined)],
];

describe('error messages name the function called', () => {
  it.each(cases)('%s', async (name, call) => {
    let error: unknown;
    try {
      await call();
    } catch (e) {
      error = e;
    }
    expect(error, `${name} did not fail`).toBeInstanceOf(Error);
    expect((error as Error).message.startsWith(name), (error as Error).message).toBe(true);
    expect(error).toMatchObject({ code: expect.stringMatching(/^(INVALID_ARGUMENT|NEVER_ALLOWED|UNSUPPORTED)$/) });
  });

  it('a bad call consumed nothing', async () => {
    expect((await limiter.peek('k')).remaining).toBe(5);
  });
});
