import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

describe('memoryStore', () => {
  it('1,000,000 distinct keys with maxKeys 100,000: the store never holds more than maxKeys, and keeps the last 50,000', async () => {
    const clock = new ManualClock(0);
    const store = memoryStore({ maxKeys: 100_000, clock });
    const limiter = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 60_000 }), store });
    (globalThis as { gc?: () => void }).gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000_000; i++) {
      const d = await limiter.tryAcquire(`attacker:${i}`);
      if (!d.allowed) throw new Error(`fresh key ${i} was denied`);
      if (i % 100_000 === 0) expect(store.size).toBeLessThanOrEqual(100_000);
    }
    expect(store.size).toBeLessThanOrEqual(100_000);
    expect(store.size).toBeGreaterThanOrEqual(50_000);
    // Generous: 100,000 small states are a few tens of MB at most; unbounded growth would be 10x that.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(150 * 1024 * 1024);
    // The most recent half of maxKeys always survives; the oldest were evicted and start afresh.
    for (let i = 950_000; i < 1_000_000; i += 997) expect((await limiter.peek(`attacker:${i}`)).remaining).toBe(9);
    expect((await limiter.peek('attacker:999999')).remaining).toBe(9);
    expect((await limiter.peek('attacker:0')).remaining).toBe(10);
  });

  it('a state expires when it stops mattering, on the injected clock', async () => {
    const clock = new ManualClock(0);
    const store = memoryStore({ clock });
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 10, refillPerSecond: 1 }), store });
    await limiter.tryAcquire('k', { permits: 4 });
    clock.advance(3_000);
    store.prune();
    expect(store.size).toBe(1); // still 1 token short of full
    clock.advance(1_002);
    store.prune();
    expect(store.size).toBe(0); // full again: as good as no state
    expect((await limiter.peek('k')).remaining).toBe(10);
  });

  it('a denial does not extend or rewrite a stored state', async () => {
    const clock = new ManualClock(0);
    const store = memoryStore({ clock });
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), store });
    await limiter.tryAcquire('k');
    clock.advance(900);
    for (let i = 0; i < 5; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    clock.advance(102);
    store.prune();
    expect(store.size).toBe(0);
  });
});
