import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { smoothBursty } from '../algorithms/smooth.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { controlStepsArb, ruleMakerArb } from '@sluice/test-kit';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

describe('refund and penalize on the memory store', () => {
  it('a refund never creates a permit beyond a fresh state, and gives back at most what it names (property, ManualClock)', async () => {
    await fc.assert(
      fc.asyncProperty(ruleMakerArb(true), controlStepsArb(), async (make, steps) => {
        const clock = new ManualClock(5_000_000);
        const rule = make({});
        const limiter = createLimiter({ rules: rule, store: memoryStore({ clock }) });
        for (const step of steps) {
          clock.advance(step.advanceMs);
          if (step.op === 'consume') {
            await limiter.tryAcquire(step.key, { permits: step.permits });
            continue;
          }
          const before = await limiter.peek(step.key);
          if (step.op === 'penalize') {
            await limiter.penalize(step.key, step.permits);
            expect((await limiter.peek(step.key)).remaining).toBeLessThanOrEqual(before.remaining);
            continue;
          }
          await limiter.refund(step.key, step.permits);
          const after = await limiter.peek(step.key);
          // Never beyond a fresh state (a full bucket, an empty window: the rule's limit), never more back than
          // asked for. (A bucket that starts part-filled holds less when never seen than it may after refilling.)
          expect(after.remaining).toBeLessThanOrEqual(rule.limit);
          expect(after.remaining - before.remaining).toBeLessThanOrEqual(step.permits);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('windows refund only from the window the grant was counted in: no aligned window passes its limit (property)', async () => {
    // A fixed window gives nothing back once another opened; a counter may give back to its previous window.
    const windowRules = [
      { make: (limit: number, windowMs: number) => fixedWindow({ limit, windowMs }), reach: 0 },
      { make: (limit: number, windowMs: number) => slidingWindowCounter({ limit, windowMs }), reach: 1 },
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...windowRules),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 50, max: 2_000 }),
        controlStepsArb(['refund']),
        async ({ make, reach }, limit, windowMs, steps) => {
          const clock = new ManualClock(7_000_000);
          const limiter = createLimiter({ rules: make(limit, windowMs), store: memoryStore({ clock }) });
          const grants: Array<{ at: number; permits: number }> = [];
          // Net permits counted per aligned window: grants in it, less what refunds of its grants gave back.
          const net = new Map<number, number>();
          const windowOf = (t: number) => Math.floor(t / windowMs);
          for (const step of steps) {
            clock.advance(step.advanceMs);
            const now = clock.now();
            if (step.op === 'consume') {
              const d = await limiter.tryAcquire('k', { permits: step.permits });
              if (d.allowed) {
                grants.push({ at: now, permits: step.permits });
                net.set(windowOf(now), (net.get(windowOf(now)) ?? 0) + step.permits);
                expect(net.get(windowOf(now))).toBeLessThanOrEqual(limit);
              }
              continue;
            }
            // Any earlier grant, not only the latest: one counted in a window that has since closed, too.
            if (grants.length === 0) continue;
            const grant = grants.splice(step.permits % grants.length, 1)[0] as (typeof grants)[number];
            const before = (await limiter.peek('k')).remaining;
            await limiter.refund('k', grant.permits, { grantedMsAgo: now - grant.at });
            const given = (await limiter.peek('k')).remaining - before;
            if (given > 0) expect(windowOf(now) - windowOf(grant.at)).toBeLessThanOrEqual(reach);
            net.set(
              windowOf(grant.at),
              (net.get(windowOf(grant.at)) ?? 0) - Math.max(0, Math.min(given, grant.permits)),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a penalty past the limit denies until it drains, and the retry time it gives is honest (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        ruleMakerArb(),
        fc.integer({ min: 1, max: 30 }),
        controlStepsArb(),
        async (make, penalty, steps) => {
          const clock = new ManualClock(3_000_000);
          const limiter = createLimiter({ rules: make({}), store: memoryStore({ clock }), retryJitterMs: 0 });
          for (const step of steps) {
            clock.advance(step.advanceMs);
            if (step.op === 'consume') await limiter.tryAcquire(step.key, { permits: 1 });
            else if (step.op === 'penalize') await limiter.penalize(step.key, step.permits);
          }
          await limiter.penalize('k', penalty);
          const d = await limiter.tryAcquire('k');
          if (d.allowed) return;
          expect(Number.isFinite(d.retryAfterMs)).toBe(true);
          clock.advance(Math.ceil(d.retryAfterMs));
          expect((await limiter.tryAcquire('k')).allowed).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('LLM token accounting: charge the estimate, then refund or penalize the difference', async () => {
    const clock = new ManualClock(0);
    const tpm = createLimiter({ rules: tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 / 60 }), clock });
    expect((await tpm.tryAcquire('tenant', { permits: 1_000 })).remaining).toBe(9_000);
    await tpm.refund('tenant', 700); // used 300 of the 1,000 estimated
    expect((await tpm.peek('tenant')).remaining).toBe(9_700);
    await tpm.penalize('tenant', 12_000); // a response far over its estimate
    expect(await tpm.tryAcquire('tenant')).toMatchObject({ allowed: false, remaining: 0 });
    await tpm.refund('tenant', 1_000_000); // never past full
    expect((await tpm.peek('tenant')).remaining).toBe(10_000);
  });

  it('a sliding log refunds its newest grants, or with a grant time the grants since then', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: slidingWindowLog({ limit: 3, windowMs: 1_000 }), clock });
    await limiter.tryAcquire('k'); // t=0
    clock.advance(500);
    await limiter.tryAcquire('k'); // t=500
    await limiter.tryAcquire('k'); // t=500
    await limiter.refund('k', 1, { grantedMsAgo: 0 });
    clock.advance(500); // t=1000: the t=0 grant left; one grant at 500 remains
    expect((await limiter.peek('k')).remaining).toBe(2);
    await limiter.refund('k', 5);
    expect((await limiter.peek('k')).remaining).toBe(3);
  });

  it('shared rules keep what they took on a refund, and pay a penalty', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 5, windowMs: 60_000, name: 'user' }),
        fixedWindow({ limit: 100, windowMs: 60_000, name: 'all', scope: 'all' }),
      ],
      clock,
    });
    await limiter.tryAcquire('u1', { permits: 3 });
    await limiter.refund('u1', 3);
    const after = await limiter.peek('u1');
    expect(after.rules?.find((r) => r.name === 'user')?.remaining).toBe(5);
    expect(after.rules?.find((r) => r.name === 'all')?.remaining).toBe(97);
    await limiter.penalize('u1', 10);
    expect((await limiter.peek('u2')).rules?.find((r) => r.name === 'all')?.remaining).toBe(87);
  });

  it("Guava's prepay cannot refund (typed error, nothing changed); a penalty pushes its next free time", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: smoothBursty({ permitsPerSecond: 10 }), clock });
    await limiter.tryAcquire('k');
    await expect(limiter.refund('k', 1)).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    await limiter.penalize('k', 20); // 2 s of permits
    expect((await limiter.tryAcquire('k')).retryAfterMs).toBeCloseTo(2_100, 6);
  });

  it('bad input: negative, fractional, NaN or non-number permits and grant times are typed errors, state untouched', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), clock });
    await limiter.tryAcquire('k', { permits: 2 });
    for (const permits of [-1, 1.5, Number.NaN, Infinity]) {
      await expect(limiter.refund('k', permits)).rejects.toBeInstanceOf(SluiceRangeError);
      await expect(limiter.penalize('k', permits)).rejects.toBeInstanceOf(SluiceRangeError);
    }
    await expect(limiter.refund('k', '1' as never)).rejects.toBeInstanceOf(SluiceTypeError);
    await expect(limiter.penalize('k', undefined as never)).rejects.toBeInstanceOf(SluiceTypeError);
    await expect(limiter.refund('k', 1, { grantedMsAgo: -5 })).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.refund('k', 1, { plan: 'pro' })).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.refund('', 1)).rejects.toBeInstanceOf(SluiceRangeError);
    expect((await limiter.peek('k')).remaining).toBe(3);
    await limiter.refund('k', 0);
    await limiter.penalize('k', 0);
    expect((await limiter.peek('k')).remaining).toBe(3);
    await limiter.close();
    await expect(limiter.refund('k', 1)).rejects.toBeInstanceOf(SluiceError);
  });

  it('a store without the controls refuses them with UNSUPPORTED', async () => {
    const inner = memoryStore().bind({ rules: [fixedWindow({ limit: 1, windowMs: 1_000 })], prefix: 'p' });
    const store = {
      bind: () => ({
        consume: inner.consume.bind(inner),
        peek: inner.peek.bind(inner),
        reset: inner.reset.bind(inner),
      }),
      close: async () => {},
    };
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), store });
    for (const call of [
      () => limiter.refund('k', 1),
      () => limiter.penalize('k', 1),
      () => limiter.block('k', 1),
      () => limiter.unblock('k'),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    }
  });
});
