import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

const START = 1_800_000_000_000;
const minute = (limit: number) => fixedWindow({ name: 'minute', limit, windowMs: 60_000 });

function setup() {
  const clock = new ManualClock(START);
  const limiter = createLimiter({ rules: minute(5), store: memoryStore({ clock }), prefix: 'ov' });
  return { clock, limiter, left: async (key: string) => (await limiter.peek(key)).remaining };
}

describe('limiter.override on the memory store', () => {
  it("gives one key its own rules, keeping what it used by rule name; removed, it returns to the limiter's", async () => {
    const { limiter, left } = setup();
    await limiter.tryAcquire('acme', { permits: 3 });
    await limiter.override('acme', minute(10));
    expect(await left('acme')).toBe(7);
    expect(await left('other')).toBe(5);
    const d = await limiter.tryAcquire('acme', { permits: 2 });
    expect(d).toMatchObject({ allowed: true, override: true, limit: 10, remaining: 5 });
    expect((await limiter.tryAcquire('other')).override).toBeUndefined();
    // A call with no options decides by the override too (the limiter's shortest path skips nothing).
    expect(await limiter.tryAcquire('acme')).toMatchObject({ override: true, remaining: 4 });
    await limiter.removeOverride('acme');
    // 6 used of the limiter's 5.
    expect(await left('acme')).toBe(0);
    expect((await limiter.tryAcquire('acme')).allowed).toBe(false);
    // Removing what is not there does nothing.
    await limiter.removeOverride('acme');
  });

  it('setting an override again replaces it, policies included', async () => {
    const { limiter } = setup();
    await limiter.tryAcquire('x', { permits: 4 });
    await limiter.override('x', minute(6));
    expect((await limiter.peek('x')).remaining).toBe(2);
    await limiter.override('x', [minute(8), fixedWindow({ name: 'hour', limit: 100, windowMs: 3_600_000 })]);
    const d = await limiter.tryAcquire('x');
    expect(d.rules?.map((r) => [r.name, r.remaining])).toEqual([
      ['minute', 3],
      ['hour', 99],
    ]);
  });

  it('a limiter with plans takes no override (as on every store: test/seams/plans-override.test.ts)', async () => {
    const limiter = createLimiter({
      plans: { free: minute(2), pro: minute(20) },
      plan: (key) => (key.startsWith('pro:') ? 'pro' : 'free'),
    });
    await limiter.tryAcquire('pro:x', { permits: 4 });
    await expect(limiter.override('pro:x', minute(6))).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    expect(await limiter.peek('pro:x')).toMatchObject({ remaining: 16, plan: 'pro' });
  });

  it('changes asked at once are made one at a time: nothing the key used is lost, the last override stands', async () => {
    const { limiter, left } = setup();
    await limiter.tryAcquire('acme', { permits: 3 });
    await Promise.all([
      limiter.override('acme', minute(10)),
      limiter.override('acme', minute(20)),
      limiter.reconfigure(minute(6)),
    ]);
    expect(await left('acme')).toBe(17);
    expect((await limiter.overrides()).overrides.map((o) => o.rules[0]?.limit)).toEqual([20]);
    await limiter.removeOverride('acme');
    // 3 used of the limiter's new 6.
    expect(await left('acme')).toBe(3);
  });

  it('lists overrides a page at a time, in key order', async () => {
    const { limiter } = setup();
    for (let i = 0; i < 250; i++) await limiter.override(`k${String(i).padStart(3, '0')}`, minute(i + 1));
    const keys: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await limiter.overrides({ cursor, count: 100 });
      keys.push(...page.overrides.map((o) => o.key));
      cursor = page.cursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(keys).toEqual(Array.from({ length: 250 }, (_, i) => `k${String(i).padStart(3, '0')}`));
    expect((await limiter.overrides({ count: 1 })).overrides[0]?.rules[0]?.limit).toBe(1);
    await expect(limiter.overrides({ count: 0 })).rejects.toThrow(SluiceRangeError);
    await expect(limiter.overrides({ count: 1001 })).rejects.toMatchObject({ argument: 'count' });
    await expect(limiter.overrides({ cursor: 7 as never })).rejects.toThrow(SluiceTypeError);
  });

  it('a reset forgets what the key used and keeps its override; a reconfigure keeps overrides', async () => {
    const { limiter, left } = setup();
    await limiter.override('acme', minute(10));
    await limiter.tryAcquire('acme', { permits: 4 });
    await limiter.reset('acme');
    expect(await left('acme')).toBe(10);
    await limiter.reconfigure(minute(3));
    expect(await left('acme')).toBe(10);
    expect(await left('other')).toBe(3);
  });

  it('refuses bad input, naming it, and changes nothing', async () => {
    const { limiter } = setup();
    await expect(limiter.override('', minute(1))).rejects.toThrow(SluiceRangeError);
    await expect(limiter.override(3 as never, minute(1))).rejects.toThrow(SluiceTypeError);
    await expect(limiter.override('acme', 'ten' as never)).rejects.toThrow(SluiceTypeError);
    await expect(
      limiter.override('acme', tokenBucket({ name: 'minute', capacity: 5, refillPerSecond: 1 })),
    ).rejects.toThrow(/"minute" is a fixedWindow; it cannot become a tokenBucket/);
    await expect(
      limiter.override('acme', fixedWindow({ name: 'global', scope: 'all', limit: 5, windowMs: 1000 })),
    ).rejects.toMatchObject({ argument: 'rules', value: 'global' });
    expect((await limiter.overrides()).overrides).toEqual([]);
    expect((await limiter.tryAcquire('acme')).override).toBeUndefined();
    await limiter.close();
    await expect(limiter.override('acme', minute(1))).rejects.toMatchObject({ code: 'CLOSED' });
  });
});
