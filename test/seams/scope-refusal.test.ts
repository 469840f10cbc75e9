/**
 * A rule's scope x every store: a scope function that gives no identity for a key (an empty string) is the
 * developer's error. On every store the call is rejected with the same SluiceTypeError, at once, nothing is
 * consumed (the other keys' counts are as if it never came), and the store stays healthy. Before, on redisStore
 * the refusal went to the fail mode, whose own identity check threw inside a promise callback: the call never
 * settled and the process saw an uncaught exception.
 */
import {
  type Limiter,
  type Store,
  SluiceTypeError,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import { type PostgresStore, postgresStore } from '@sluice/postgres';
import { type RedisStore, redisStore } from '@sluice/redis';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../harness/use-postgres.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const db = useTestDatabase();
let n = 0;
const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const tenantOf = (key: string): string => key.split(':')[1] ?? '';

/** Every store whose rules may have a scope (leased and divided mode refuse a scoped rule when the limiter is made). */
const STORES: Record<string, () => Store> = {
  memory: () => memoryStore(),
  redis: () => redisStore({ redis: testRedis().redis }),
  postgres: () => postgresStore({ pool: db().pool() }),
};

function limiterOn(store: Store): Limiter {
  const limiter = createLimiter({
    store,
    prefix: `scope-refusal-${process.pid}-${++n}`,
    rules: [
      tokenBucket({ capacity: 3, refillPerSecond: 0.001 }),
      fixedWindow({ limit: 100, windowMs: 60_000, name: 'tenant', scope: tenantOf }),
    ],
  });
  closing.push(
    () => store.close(),
    () => limiter.close(),
  );
  return limiter;
}

describe.each(Object.keys(STORES))('%s store', (name) => {
  it('a scope that gives no identity rejects that call with SluiceTypeError, consumes nothing, and the store stays healthy', async () => {
    const store = (STORES[name] as () => Store)();
    const limiter = limiterOn(store);
    await limiter.ready();
    let failures = 0;
    // The central stores say when their engine fails; the memory store has none to fail.
    if ('on' in store) (store as RedisStore | PostgresStore).on('store-error', () => failures++);
    expect((await limiter.tryAcquire('user:acme')).remaining).toBe(2);
    for (let i = 0; i < 3; i++) {
      const refused = await limiter.tryAcquire('no-tenant').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(SluiceTypeError);
      expect((refused as SluiceTypeError).message).toMatch(/scope function must return a non-empty string/);
    }
    // Nothing was consumed by the refused calls: the key's bucket has 1 left, the tenant's window 98.
    const next = await limiter.tryAcquire('user:acme');
    expect(next.allowed).toBe(true);
    expect(next.remaining).toBe(1);
    expect(next.rules?.find((r) => r.name === 'tenant')?.remaining).toBe(98);
    expect(next.source ?? 'store').not.toBe('fallback');
    expect(failures).toBe(0);
  });
});
