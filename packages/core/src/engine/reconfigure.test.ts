import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Algorithm, TOLERANCE_MS } from '../algorithms/algorithm.js';
import type { CarryMode } from '../algorithms/carry.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import type { Store } from './store.js';

const START = 1_800_000_000_000;

/** A limiter on a shared memory store and a manual clock, and what one permit's peek says is left. */
function setup(rules: Algorithm | Algorithm[]) {
  const clock = new ManualClock(START);
  const store = memoryStore({ clock });
  const limiter = createLimiter({ rules, store, prefix: 'live' });
  const left = async (key = 'k') => (await limiter.peek(key)).remaining;
  return { clock, store, limiter, left };
}

async function spend(limiter: ReturnType<typeof setup>['limiter'], permits: number, key = 'k'): Promise<void> {
  const d = await limiter.tryAcquire(key, { permits });
  expect(d.allowed).toBe(true);
}

describe('limiter.reconfigure on the memory store', () => {
  for (const [kind, make] of [
    ['fixedWindow', (limit: number) => fixedWindow({ name: 'api', limit, windowMs: 60_000 })],
    ['tokenBucket', (limit: number) => tokenBucket({ name: 'api', capacity: limit, refillPerSecond: limit / 3600 })],
    ['slidingWindowLog', (limit: number) => slidingWindowLog({ name: 'api', limit, windowMs: 60_000 })],
  ] as const) {
    it(`${kind}: 60 used of 100 leaves 0 of a new 50 and 140 of a new 200; proportional 30 of 50; fresh 50`, async () => {
      const expectLeft = async (mode: CarryMode, limit: number, left: number) => {
        const s = setup(make(100));
        await spend(s.limiter, 60);
        await s.limiter.reconfigure(make(limit), { carry: mode });
        expect(await s.left(), `${mode} to ${limit}`).toBe(left);
        // Other keys start fresh under the new limit.
        expect(await s.left('other')).toBe(limit);
      };
      await expectLeft('used', 50, 0);
      await expectLeft('used', 200, 140);
      await expectLeft('proportional', 50, 20);
      await expectLeft('proportional', 200, 80);
      await expectLeft('fresh', 50, 50);
    });
  }

  it('rules, configVersion and decisions follow the change; a new rule starts fresh, a dropped one is gone', async () => {
    const { limiter, left } = setup(fixedWindow({ name: 'minute', limit: 10, windowMs: 60_000 }));
    await spend(limiter, 4);
    expect(limiter.configVersion).toBe(1);
    expect((await limiter.tryAcquire('k')).configVersion).toBeUndefined();
    const config = await limiter.reconfigure([
      fixedWindow({ name: 'minute', limit: 20, windowMs: 60_000 }),
      fixedWindow({ name: 'hour', limit: 100, windowMs: 3_600_000 }),
    ]);
    expect(config.version).toBe(2);
    expect(limiter.configVersion).toBe(2);
    expect(limiter.rules.map((r) => [r.name, r.limit])).toEqual([
      ['minute', 20],
      ['hour', 100],
    ]);
    const d = await limiter.tryAcquire('k');
    expect(d.configVersion).toBe(2);
    // 6 used of the minute's 20 (4, the decision above, this one); the hour is new: 1 used of 100.
    expect(d.rules?.map((r) => r.remaining)).toEqual([14, 99]);
    await limiter.reconfigure(fixedWindow({ name: 'hour', limit: 50, windowMs: 3_600_000 }));
    expect(await left()).toBe(49);
    expect((await limiter.peek('k')).configVersion).toBe(3);
  });

  it('changes in quick succession carry what was used through every generation', async () => {
    const { limiter, left } = setup(tokenBucket({ name: 'b', capacity: 100, refillPerSecond: 0.001 }));
    await spend(limiter, 30);
    await limiter.reconfigure(tokenBucket({ name: 'b', capacity: 80, refillPerSecond: 0.001 }));
    await limiter.reconfigure(tokenBucket({ name: 'b', capacity: 120, refillPerSecond: 0.001 }));
    expect(await left()).toBe(90);
  });

  it('a reset after a change forgets the key in every generation; a ban survives the change', async () => {
    const { limiter, left, clock } = setup(fixedWindow({ name: 'w', limit: 5, windowMs: 60_000 }));
    await spend(limiter, 5);
    await limiter.reconfigure(fixedWindow({ name: 'w', limit: 6, windowMs: 60_000 }));
    await limiter.reset('k');
    expect(await left()).toBe(6);
    await limiter.block('b', 10_000);
    await limiter.reconfigure(fixedWindow({ name: 'w', limit: 7, windowMs: 60_000 }));
    expect((await limiter.tryAcquire('b')).blocked).toBe(true);
    clock.advance(10_001);
    expect((await limiter.tryAcquire('b')).allowed).toBe(true);
  });

  it('lets the old generation go once its states cannot matter', async () => {
    const { limiter, left, clock } = setup(fixedWindow({ name: 'w', limit: 5, windowMs: 1_000 }));
    await spend(limiter, 5, 'old');
    await limiter.reconfigure(fixedWindow({ name: 'w', limit: 5, windowMs: 1_000 }));
    clock.advance(10_000);
    expect(await left('old')).toBe(5);
  });

  it('refuses bad input, naming it, and changes nothing', async () => {
    const { limiter, left } = setup(tokenBucket({ name: 'api', capacity: 10, refillPerSecond: 1 }));
    await spend(limiter, 4);
    const kindChange = limiter.reconfigure(fixedWindow({ name: 'api', limit: 10, windowMs: 1000 }));
    await expect(kindChange).rejects.toThrow(SluiceRangeError);
    await expect(kindChange).rejects.toThrow(/"api" is a tokenBucket; it cannot become a fixedWindow/);
    await expect(limiter.reconfigure('fast' as never)).rejects.toThrow(SluiceTypeError);
    await expect(
      limiter.reconfigure(tokenBucket({ name: 'api', capacity: 5, refillPerSecond: 1 }), { carry: 'all' as never }),
    ).rejects.toMatchObject({ argument: 'carry', value: 'all' });
    await expect(
      limiter.reconfigure(tokenBucket({ name: 'api', capacity: 5, refillPerSecond: 1 }), { carry: 3 as never }),
    ).rejects.toThrow(SluiceTypeError);
    expect(limiter.configVersion).toBe(1);
    expect(limiter.rules[0]?.limit).toBe(10);
    expect(await left()).toBe(6);
    await limiter.close();
    await expect(limiter.reconfigure(tokenBucket({ capacity: 5, refillPerSecond: 1 }))).rejects.toMatchObject({
      code: 'CLOSED',
    });
  });

  it('a limiter with plans, or a store that cannot carry states over, refuses with UNSUPPORTED', async () => {
    const planned = createLimiter({ plans: { free: fixedWindow({ limit: 1, windowMs: 1000 }) } });
    await expect(planned.reconfigure(fixedWindow({ limit: 2, windowMs: 1000 }))).rejects.toMatchObject({
      code: 'UNSUPPORTED',
    });
    // A store of one's own that keeps its states its own way (it implements no StateAccess).
    const inner = memoryStore();
    const own: Store = {
      bind: (ruleSet) => {
        const bound = inner.bind(ruleSet);
        return { consume: bound.consume.bind(bound), peek: bound.peek.bind(bound), reset: bound.reset.bind(bound) };
      },
      close: () => inner.close(),
    };
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), store: own });
    const refused = limiter.reconfigure(fixedWindow({ limit: 2, windowMs: 1000 }));
    await expect(refused).rejects.toThrow(SluiceError);
    await expect(refused).rejects.toThrow(/cannot carry keys' states over/);
  });

  it('a limiter with its own store changes too', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ name: 'w', limit: 3, windowMs: 60_000 }) });
    await spend(limiter, 2);
    await limiter.reconfigure(fixedWindow({ name: 'w', limit: 4, windowMs: 60_000 }));
    expect((await limiter.peek('k')).remaining).toBe(2);
    await limiter.close();
  });
});

describe('reconfigure never grants what neither the old rules nor the new would, given what was used', () => {
  it('fixed window: the window of the change admits at most max(old, what the new limit leaves after what was used)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 30 }),
        fc.constantFrom<CarryMode>('used', 'proportional'),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4_000 }), fc.integer({ min: 1, max: 5 })), { maxLength: 40 }),
        fc.integer({ min: 0, max: 40 }),
        async (oldLimit, newLimit, mode, steps, changeAt) => {
          const windowMs = 10_000;
          const { limiter, clock } = setup(fixedWindow({ name: 'w', limit: oldLimit, windowMs }));
          const admitted: Array<{ at: number; permits: number; afterChange: boolean }> = [];
          let changedAt = Number.NaN;
          for (const [i, [dt, permits]] of steps.entries()) {
            if (i === changeAt) {
              await limiter.reconfigure(fixedWindow({ name: 'w', limit: newLimit, windowMs }), { carry: mode });
              changedAt = clock.now();
            }
            clock.advance(dt);
            const d = await limiter.tryAcquire('k', { permits });
            if (d.allowed) admitted.push({ at: clock.now(), permits, afterChange: !Number.isNaN(changedAt) });
          }
          if (Number.isNaN(changedAt)) return;
          const window = Math.floor(changedAt / windowMs);
          const inWindow = admitted.filter((a) => Math.floor(a.at / windowMs) === window);
          const sum = (list: typeof admitted) => list.reduce((n, a) => n + a.permits, 0);
          const usedBefore = sum(inWindow.filter((a) => !a.afterChange));
          const carried = mode === 'used' ? usedBefore : Math.ceil((usedBefore * newLimit) / oldLimit - 1e-9);
          expect(sum(inWindow.filter((a) => a.afterChange))).toBeLessThanOrEqual(Math.max(0, newLimit - carried));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('token bucket: after the change, admissions over any span T stay within what the new bucket leaves plus its refill', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 1, max: 8 })), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.nat(),
        async (oldCapacity, newCapacity, steps, at) => {
          const rate = 2;
          const { limiter, clock } = setup(tokenBucket({ name: 'b', capacity: oldCapacity, refillPerSecond: rate }));
          const changeAt = at % steps.length;
          let usedAtChange = 0;
          let tokens = oldCapacity;
          let last = clock.now();
          let after = 0;
          let changedAt = Number.NaN;
          for (const [i, [dt, permits]] of steps.entries()) {
            clock.advance(dt);
            if (i === changeAt) {
              tokens = Math.min(oldCapacity, tokens + ((clock.now() - last) * rate) / 1000);
              usedAtChange = oldCapacity - tokens;
              await limiter.reconfigure(tokenBucket({ name: 'b', capacity: newCapacity, refillPerSecond: rate }));
              changedAt = clock.now();
            }
            const d = await limiter.tryAcquire('k', { permits });
            if (!d.allowed) continue;
            if (Number.isNaN(changedAt)) {
              tokens = Math.min(oldCapacity, tokens + ((clock.now() - last) * rate) / 1000) - permits;
              last = clock.now();
            } else after += permits;
          }
          const span = (clock.now() - changedAt) / 1000;
          // A grant may come TOLERANCE_MS early (the bucket's own slack): that much of the rate, once.
          const slack = 1e-6 + (rate * TOLERANCE_MS) / 1000;
          expect(after).toBeLessThanOrEqual(Math.max(0, newCapacity - usedAtChange) + rate * span + slack);
        },
      ),
      { numRuns: 300 },
    );
  });
});
