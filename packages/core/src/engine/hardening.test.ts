import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { gcra } from '../algorithms/gcra.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { smoothBursty, smoothWarmingUp } from '../algorithms/smooth.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { MAX_TIMER_MS, timerSleep } from '../foundation/clock.js';
import { SluiceRangeError } from '../foundation/errors.js';
import { rateLimitHeaders } from '../adapters/http/headers.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import type { BoundStore, Store } from './store.js';

/** A store that counts the decisions its limiter asks for. */
function countingStore(): Store & { consumed: number } {
  const inner = memoryStore();
  const counter = {
    consumed: 0,
    clock: inner.clock,
    bind(ruleSet: Parameters<Store['bind']>[0]): BoundStore {
      const bound = inner.bind(ruleSet);
      return {
        consume: (key, permits, maxWaitMs) => {
          counter.consumed++;
          return bound.consume(key, permits, maxWaitMs);
        },
        peek: (key) => bound.peek(key),
        reset: (key) => bound.reset(key),
      };
    },
    close: () => inner.close(),
  };
  return counter;
}

const settledWithin = async (promise: Promise<unknown>, ms: number): Promise<boolean> => {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return settled;
};

describe('waits past 2^31 - 1 ms (about 24.8 days)', () => {
  it('timerSleep sleeps them in chunks instead of firing after 1 ms', async () => {
    const abort = new AbortController();
    const sleep = timerSleep(MAX_TIMER_MS + 10, abort.signal);
    expect(await settledWithin(sleep, 100)).toBe(false);
    abort.abort();
    await expect(sleep).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('a token bucket refilling once in 30 days does not grant a second acquire() early', async () => {
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 1, refillPerSecond: 1 / (30 * 86_400) }) });
    await limiter.acquire('k');
    const abort = new AbortController();
    const second = limiter.acquire('k', { signal: abort.signal });
    expect(await settledWithin(second, 150)).toBe(false);
    abort.abort();
    await expect(second).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('a 365-day fixed window makes acquire() sleep, not spin', async () => {
    const store = countingStore();
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 365 * 86_400_000 }), store });
    await limiter.acquire('k');
    const abort = new AbortController();
    const second = limiter.acquire('k', { signal: abort.signal });
    expect(await settledWithin(second, 200)).toBe(false);
    expect(store.consumed).toBe(2); // the grant, then one denial it sleeps on
    abort.abort();
    await expect(second).rejects.toMatchObject({ code: 'ABORTED' });
  });
});

describe('absurd rates', () => {
  it.each([
    ['tokenBucket', () => tokenBucket({ capacity: 1, refillPerSecond: 1e-300 }), 'refillPerSecond'],
    ['gcra', () => gcra({ permitsPerSecond: 1e-300, burst: 1 }), 'permitsPerSecond'],
    ['leakyBucket', () => leakyBucket({ capacity: 1, leakPerSecond: 1e-300 }), 'leakPerSecond'],
    ['smoothBursty', () => smoothBursty({ permitsPerSecond: 1e-300 }), 'permitsPerSecond'],
    ['smoothWarmingUp', () => smoothWarmingUp({ permitsPerSecond: 1, warmupMs: 1e300 }), 'warmupMs'],
    ['fixedWindow', () => fixedWindow({ limit: 1, windowMs: 2 ** 52 }), 'windowMs'],
  ])('%s whose period cannot be represented is refused, naming the option', (_, make, option) => {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceRangeError);
    expect((error as SluiceRangeError).argument).toBe(option);
    expect((error as Error).message).toMatch(/about 317 years/);
  });

  it('a century-long rule is fine, and its headers print whole seconds', async () => {
    const rule = tokenBucket({ capacity: 1, refillPerSecond: 1 / (100 * 365 * 86_400) });
    const limiter = createLimiter({ rules: rule });
    await limiter.tryAcquire('k');
    const denied = await limiter.tryAcquire('k');
    for (const [name, value] of rateLimitHeaders(denied, [rule], 'draft-8')) {
      const numbers = name === 'Retry-After' ? [value] : [...value.matchAll(/;[qwrt]=([^,;]*)/g)].map((m) => m[1]);
      expect(numbers.length).toBeGreaterThan(0);
      for (const n of numbers) expect(n).toMatch(/^\d+$/);
    }
  });

  it('headers never print a non-integer or an exponent, even for a hand-made decision', () => {
    const rule = fixedWindow({ limit: 1, windowMs: 1000 });
    const decision = {
      allowed: false,
      limit: 1,
      remaining: 0,
      retryAfterMs: 1e300,
      resetAfterMs: 1e300,
      waitMs: 0,
      rule: rule.name,
    };
    const headers = Object.fromEntries(rateLimitHeaders(decision, [rule], 'draft-6'));
    expect(headers['Retry-After']).toBe('2147483648');
    expect(headers['RateLimit-Reset']).toBe('2147483648');
  });
});

describe('closed limiters and idle memory', () => {
  it('a closed limiter frees its prefix: the same prefix binds again with other rules', async () => {
    const store = memoryStore();
    for (let limit = 1; limit <= 50; limit++) {
      const limiter = createLimiter({
        rules: fixedWindow({ limit, windowMs: 1000, name: 'w' }),
        store,
        prefix: 'p',
      });
      await limiter.tryAcquire('k');
      await limiter.close();
    }
    // Still refused while the other limiter is open.
    const open = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000, name: 'w' }), store, prefix: 'q' });
    expect(() =>
      createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 1000, name: 'w' }), store, prefix: 'q' }),
    ).toThrow(/already used/);
    await open.close();
    expect(() =>
      createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 1000, name: 'w' }), store, prefix: 'q' }),
    ).not.toThrow();
  });

  it('a limiter with no keys costs kilobytes, not the megabytes of 100,000 preallocated slots', () => {
    const before = process.memoryUsage().heapUsed;
    const limiters = Array.from({ length: 100 }, () =>
      createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }) }),
    );
    const perLimiter = (process.memoryUsage().heapUsed - before) / limiters.length;
    // Preallocated, each cost about 2.7 MB (270 MB for these 100).
    expect(perLimiter).toBeLessThan(200_000);
  });
});

describe('default rule names', () => {
  it('differ for rules that differ, so limiters left at their defaults never share state', () => {
    expect(fixedWindow({ limit: 5, windowMs: 900_000 }).name).toBe('fw-5-per-15m');
    expect(fixedWindow({ limit: 100, windowMs: 60_000 }).name).toBe('fw-100-per-1m');
    expect(tokenBucket({ capacity: 100, refillPerSecond: 10 }).name).toBe('tb-100-10ps');
    expect(tokenBucket({ capacity: 100, refillPerSecond: 10, initialPermits: 0 }).name).toBe('tb-100-10ps-i0');
    expect(gcra({ permitsPerSecond: 0.5, burst: 5 }).name).toBe('gcra-0.5ps-5');
    expect(smoothWarmingUp({ permitsPerSecond: 2, warmupMs: 10_000, coldFactor: 4 }).name).toBe('swu-2ps-w10s-c4');
    // Too long to spell out: a digest, still within the name alphabet and length.
    const long = tokenBucket({ capacity: 123456789, refillPerSecond: 1 / 3, initialPermits: 7, maxDebt: 123456 }).name;
    expect(long).toMatch(/^[A-Za-z0-9_.-]{1,64}$/);
  });
});
