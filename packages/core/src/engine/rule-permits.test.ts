/**
 * Each rule's own count in one call (`permits: { rpm: 1, tpm: 1_200 }`): one atomic decision over a policy,
 * on the memory store; a denial takes nothing from any rule; refunds and penalties name the rules they
 * adjust; bad per-rule permits are typed errors naming the value and take nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

const MINUTE = 60_000;
const llm = () => [
  fixedWindow({ name: 'rpm', limit: 3, windowMs: MINUTE }),
  fixedWindow({ name: 'tpm', limit: 5_000, windowMs: MINUTE }),
];

/** A limiter of llm() on a memory store whose clock the test moves (or, with autoAdvance, its sleeps). */
function llmLimiter(autoAdvance = false) {
  const clock = new ManualClock(10 * MINUTE, { autoAdvance });
  return { clock, limiter: createLimiter({ rules: llm(), store: memoryStore({ clock }) }) };
}

const remainingOf = (rules: readonly { name: string; remaining: number }[] | undefined) =>
  Object.fromEntries((rules ?? []).map((r) => [r.name, r.remaining]));

describe('per-rule permits on the memory store', () => {
  it('one call counts each rule its own: 1 request and 1,200 tokens; either rule denies, and a denial takes nothing', async () => {
    const { limiter } = llmLimiter();
    const call = { permits: { rpm: 1, tpm: 1_200 } };
    const first = await limiter.tryAcquire('acme', call);
    expect(first.allowed).toBe(true);
    expect(remainingOf(first.rules)).toEqual({ rpm: 2, tpm: 3_800 });
    // 4,000 tokens more: tpm denies, and rpm keeps its 2.
    const big = await limiter.tryAcquire('acme', { permits: { rpm: 1, tpm: 4_000 } });
    expect(big).toMatchObject({ allowed: false, rule: 'tpm' });
    expect(remainingOf(big.rules)).toEqual({ rpm: 2, tpm: 3_800 });
    expect((await limiter.tryAcquire('acme', call)).allowed).toBe(true);
    expect((await limiter.tryAcquire('acme', call)).allowed).toBe(true);
    // rpm is spent: a fourth call is denied by it, and tpm keeps its 1,400.
    const fourth = await limiter.tryAcquire('acme', call);
    expect(fourth).toMatchObject({ allowed: false, rule: 'rpm' });
    expect(remainingOf(fourth.rules)).toEqual({ rpm: 0, tpm: 1_400 });
  });

  it('a rule the permits do not name is asked for 0: it lets the call through unless it is past its limit', async () => {
    const { limiter } = llmLimiter();
    expect((await limiter.tryAcquire('acme', { permits: { tpm: 5_000 } })).allowed).toBe(true);
    expect(remainingOf((await limiter.peek('acme')).rules)).toMatchObject({ rpm: 3 });
    await limiter.penalize('acme', { rpm: 4 });
    // rpm is past its limit (4 of 3): even a call that counts nothing of it is refused.
    expect(await limiter.tryAcquire('acme', { permits: { tpm: 1 } })).toMatchObject({ allowed: false, rule: 'rpm' });
    expect(await limiter.tryAcquire('other', { permits: { tpm: 1 } })).toMatchObject({ allowed: true });
    expect(await limiter.tryAcquire('acme', { permits: { tpm: 0, rpm: 0 } }).catch((e) => e)).toBeInstanceOf(
      SluiceRangeError,
    );
  });

  it('refund and penalize adjust only the rules they name: the real token count settled after the call', async () => {
    const { limiter } = llmLimiter();
    // An estimate of 2,000 tokens; the call used 1,300 (700 back to tpm) and then one that used 2,500 (500 more).
    const d = await limiter.tryAcquire('acme', { permits: { rpm: 1, tpm: 2_000 } });
    await limiter.refund('acme', { tpm: 700 }, { decision: d });
    expect(remainingOf((await limiter.peek('acme')).rules)).toEqual({ rpm: 2, tpm: 3_700 });
    await limiter.penalize('acme', { tpm: 500 });
    expect(remainingOf((await limiter.peek('acme')).rules)).toEqual({ rpm: 2, tpm: 3_200 });
    // A refund of a number gives it back to every rule, as before.
    await limiter.refund('acme', 1);
    expect(remainingOf((await limiter.peek('acme')).rules)).toEqual({ rpm: 3, tpm: 3_201 });
  });

  it('acquire waits for every rule its call counts against (ManualClock)', async () => {
    const { clock, limiter } = llmLimiter(true);
    await limiter.tryAcquire('acme', { permits: { rpm: 1, tpm: 5_000 } });
    // tpm is spent until the next minute: the call sleeps until then (the clock moves with the sleep).
    const waited = await limiter.acquire('acme', { permits: { rpm: 1, tpm: 100 } });
    expect(waited).toBeGreaterThan(0);
    expect(clock.now()).toBeGreaterThanOrEqual(11 * MINUTE);
    expect(remainingOf((await limiter.peek('acme')).rules)).toEqual({ rpm: 2, tpm: 4_900 });
  });

  it('bad per-rule permits are typed errors naming the value, and take nothing', async () => {
    const { limiter } = llmLimiter();
    const bad: [unknown, unknown][] = [
      [{ rpm: 1, tpmm: 100 }, SluiceRangeError],
      [{ rpm: -1, tpm: 1 }, SluiceRangeError],
      [{ rpm: 1.5 }, SluiceRangeError],
      [{ rpm: '1' }, SluiceTypeError],
      [{}, SluiceRangeError],
      [[1, 1200], SluiceTypeError],
      [null, SluiceTypeError],
    ];
    for (const [permits, type] of bad) {
      const error = await limiter.tryAcquire('acme', { permits: permits as never }).catch((e: unknown) => e);
      expect(error, JSON.stringify(permits)).toBeInstanceOf(type);
      expect((error as Error).message).toMatch(/^tryAcquire: permits/);
    }
    await expect(limiter.refund('acme', { tpmm: 1 })).rejects.toMatchObject({ argument: 'permits.tpmm' });
    await expect(limiter.penalize('acme', { tpm: Number.NaN })).rejects.toBeInstanceOf(SluiceRangeError);
    expect(remainingOf((await limiter.peek('acme')).rules)).toEqual({ rpm: 3, tpm: 5_000 });
  });

  it('never past any rule in any window, and a denial changes no rule (property, ManualClock)', async () => {
    const step = fc.record({
      advanceMs: fc.integer({ min: 0, max: 20_000 }),
      rpm: fc.integer({ min: 0, max: 2 }),
      tpm: fc.integer({ min: 0, max: 3_000 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const { clock, limiter } = llmLimiter();
        const used = new Map<number, { rpm: number; tpm: number }>();
        for (const s of steps) {
          clock.advance(s.advanceMs);
          if (s.rpm === 0 && s.tpm === 0) continue;
          const before = remainingOf((await limiter.peek('k')).rules);
          const d = await limiter.tryAcquire('k', { permits: { rpm: s.rpm, tpm: s.tpm } });
          if (!d.allowed) {
            expect(remainingOf((await limiter.peek('k')).rules)).toEqual(before);
            continue;
          }
          const window = Math.floor(clock.now() / MINUTE);
          const sum = used.get(window) ?? { rpm: 0, tpm: 0 };
          used.set(window, { rpm: sum.rpm + s.rpm, tpm: sum.tpm + s.tpm });
        }
        for (const sum of used.values()) {
          expect(sum.rpm).toBeLessThanOrEqual(3);
          expect(sum.tpm).toBeLessThanOrEqual(5_000);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('per-rule permits that ask every rule the same are that number of permits; one rule may be named too', async () => {
    const clock = new ManualClock(0);
    const one = createLimiter({
      rules: tokenBucket({ name: 'api', capacity: 10, refillPerSecond: 1 }),
      store: memoryStore({ clock }),
    });
    expect(await one.tryAcquire('k', { permits: { api: 4 } })).toMatchObject({ allowed: true, remaining: 6 });
    const both = llmLimiter().limiter;
    const same = await both.tryAcquire('k', { permits: { rpm: 2, tpm: 2 } });
    expect(remainingOf(same.rules)).toEqual({ rpm: 1, tpm: 4_998 });
  });
});
