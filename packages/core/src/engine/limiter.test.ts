import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { smoothBursty } from '../algorithms/smooth.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import { everyAlgorithm } from '@sluice/test-kit';

describe('createLimiter', () => {
  it('tryAcquire decides at once by default and reports the numbers', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 10_000 }), clock });
    expect(await limiter.tryAcquire('a')).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetAfterMs: 10_000,
      waitMs: 0,
      rule: 'fw-2-per-10s',
    });
    await limiter.tryAcquire('a');
    clock.advance(2_500);
    expect(await limiter.tryAcquire('a')).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 7_500 });
    expect(await limiter.tryAcquire('b')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('a denial consumes nothing: peek is the same before and after', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 5, refillPerSecond: 1 }), clock });
    await limiter.tryAcquire('k', { permits: 4 });
    const before = await limiter.peek('k');
    expect((await limiter.tryAcquire('k', { permits: 2 })).allowed).toBe(false);
    expect(await limiter.peek('k')).toEqual(before);
    expect(before.remaining).toBe(1);
  });

  it('permits above the limit are denied with retryAfterMs Infinity, never allowed; acquire refuses to wait forever', async () => {
    const clock = new ManualClock(0);
    // Every kind of the registry, and a leaky bucket's shape mode.
    const rules = [
      ...everyAlgorithm({ limit: 3, windowMs: 1000, perSecond: 1 }),
      leakyBucket({ capacity: 3, leakPerSecond: 1, mode: 'shape' }),
    ];
    for (const algorithm of rules) {
      const limiter = createLimiter({ rules: algorithm, clock });
      const d = await limiter.tryAcquire('k', { permits: algorithm.limit + 1, maxWaitMs: 60_000 });
      if (!algorithm.refundable) {
        // Guava's prepay (the rules that cannot refund): any size is granted now, and the next caller pays.
        expect(d.allowed, algorithm.kind).toBe(true);
        continue;
      }
      expect(d, algorithm.kind).toMatchObject({ allowed: false, retryAfterMs: Infinity });
      await expect(limiter.acquire('k', { permits: algorithm.limit + 1 })).rejects.toMatchObject({
        code: 'NEVER_ALLOWED',
      });
      expect((await limiter.peek('k')).remaining, algorithm.kind).toBe(3);
    }
  });

  it('maxWaitMs: a denied request sleeps exactly retryAfterMs, then succeeds', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), clock, retryJitterMs: 0 });
    await limiter.tryAcquire('k');
    clock.advance(400);
    const pending = limiter.tryAcquire('k', { maxWaitMs: 600 });
    await Promise.resolve();
    expect(clock.pendingSleeps).toBe(1);
    clock.advance(599);
    expect(clock.pendingSleeps).toBe(1);
    clock.advance(1);
    expect(await pending).toMatchObject({ allowed: true });
  });

  it('maxWaitMs: gives up at once when the deadline cannot be met', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), clock });
    await limiter.tryAcquire('k');
    const d = await limiter.tryAcquire('k', { maxWaitMs: 999 });
    expect(d).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    expect(clock.now()).toBe(0);
  });

  it('maxWaitMs with a reserving rule: the reservation is granted and sat out, first come first served', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 1, refillPerSecond: 10 }), clock });
    await limiter.tryAcquire('k');
    const d = await limiter.tryAcquire('k', { maxWaitMs: 500 });
    expect(d).toMatchObject({ allowed: true, waitMs: 100 });
    expect(clock.now()).toBe(100);
    // Queue three more reservations: 100 ms apart each, whoever waits.
    const waits = [];
    for (let i = 0; i < 3; i++) waits.push((await limiter.tryAcquire('k', { maxWaitMs: 150 })).waitMs);
    expect(waits).toEqual([100, 100, 100]);
  });

  it('acquire resolves to the ms waited (smoothBursty prepay)', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = createLimiter({ rules: smoothBursty({ permitsPerSecond: 5 }), clock });
    expect([await limiter.acquire('k'), await limiter.acquire('k'), await limiter.acquire('k')]).toEqual([0, 200, 200]);
  });

  it('abort: a waiting call rejects with SluiceError ABORTED; close rejects waiters with CLOSED', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), clock });
    await limiter.tryAcquire('k');
    const controller = new AbortController();
    const waiting = limiter.tryAcquire('k', { maxWaitMs: 5_000, signal: controller.signal });
    controller.abort(new Error('client went away'));
    await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
    await expect(limiter.tryAcquire('k', { maxWaitMs: 1, signal: controller.signal })).rejects.toBeInstanceOf(
      SluiceError,
    );
    const closing = limiter.acquire('k');
    await limiter.close();
    await expect(closing).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(limiter.tryAcquire('k')).rejects.toMatchObject({ code: 'CLOSED' });
    await limiter.close();
  });

  it('reset forgets a key', async () => {
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      clock: new ManualClock(0),
    });
    await limiter.tryAcquire('k');
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    await limiter.reset('k');
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
  });

  it('limiters with different prefixes never share state in a shared store', async () => {
    const clock = new ManualClock(0);
    const store = memoryStore({ clock });
    const a = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), store, prefix: 'a' });
    const b = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), store, prefix: 'a:b' });
    expect((await a.tryAcquire('b:k')).allowed).toBe(true);
    expect((await b.tryAcquire('k')).allowed).toBe(true);
    expect((await a.tryAcquire('b:k')).allowed).toBe(false);
    expect(store.size).toBe(2);
  });
});

describe('policies', () => {
  const apiPolicy = () => [
    fixedWindow({ limit: 200, windowMs: 10_000, name: 'burst' }),
    fixedWindow({ limit: 5_000, windowMs: 3_600_000, name: 'hour' }),
    fixedWindow({ limit: 20_000, windowMs: 86_400_000, name: 'day' }),
  ];

  it("the seed's API policy: 200 / 10 s, 5,000 / h, 20,000 / day; the 201st in 10 s is refused, reporting every rule", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: apiPolicy(), clock });
    for (let i = 0; i < 200; i++) expect((await limiter.tryAcquire('user:1')).allowed).toBe(true);
    const d = await limiter.tryAcquire('user:1');
    expect(d).toMatchObject({ allowed: false, rule: 'burst', limit: 200, remaining: 0, retryAfterMs: 10_000 });
    expect(d.rules?.map((r) => [r.name, r.remaining, r.allowed])).toEqual([
      ['burst', 0, false],
      ['hour', 4_800, true],
      ['day', 19_800, true],
    ]);
  });

  it('denies exactly when any rule is exhausted, and a denial consumes from no rule (model check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ dtMs: fc.integer({ min: 0, max: 400_000 }), permits: fc.integer({ min: 1, max: 120 }) }), {
          maxLength: 400,
        }),
        async (events) => {
          const clock = new ManualClock(0);
          const rules = apiPolicy();
          const limiter = createLimiter({ rules: rules, clock });
          // The model: each rule on its own, its state advanced only when the whole policy allows.
          const states: unknown[] = [undefined, undefined, undefined];
          for (const e of events) {
            clock.advance(e.dtMs);
            const outcomes = rules.map((r, i) => r.consume(states[i] as never, clock.now(), e.permits, 0));
            const expected = outcomes.every((o) => o.allowed);
            const d = await limiter.tryAcquire('user', { permits: e.permits });
            expect(d.allowed).toBe(expected);
            if (expected) {
              outcomes.forEach((o, i) => {
                states[i] = o.state;
              });
            }
            const peek = await limiter.peek('user');
            peek.rules?.forEach((r, i) => {
              const alone = rules[i]!.consume(states[i] as never, clock.now(), 1, 0);
              expect(r.remaining).toBe(alone.allowed ? alone.remaining + 1 : alone.remaining);
            });
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('mixed algorithms in one policy, all-or-nothing', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: [tokenBucket({ capacity: 3, refillPerSecond: 1 }), slidingWindowLog({ limit: 5, windowMs: 10_000 })],
      clock,
      retryJitterMs: 0,
    });
    for (let i = 0; i < 3; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    const denied = await limiter.tryAcquire('k');
    expect(denied).toMatchObject({ allowed: false, rule: 'tb-3-1ps', retryAfterMs: 1000 });
    expect(denied.rules?.find((r) => r.name === 'swl-5-per-10s')?.remaining).toBe(2);
    clock.advance(2_000);
    for (let i = 0; i < 2; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    clock.advance(1_000);
    const byLog = await limiter.tryAcquire('k');
    expect(byLog).toMatchObject({ allowed: false, rule: 'swl-5-per-10s', retryAfterMs: 7_000 });
  });

  it('rule names in a policy must be unique; default names differ for rules that differ', () => {
    const named = (limit: number) => fixedWindow({ limit, windowMs: 1000, name: 'same' });
    expect(() => createLimiter({ rules: [named(1), named(2)] })).toThrow(/unique/);
    const threeWindows = createLimiter({
      rules: [
        fixedWindow({ limit: 200, windowMs: 10_000 }),
        fixedWindow({ limit: 5_000, windowMs: 3_600_000 }),
        fixedWindow({ limit: 20_000, windowMs: 86_400_000 }),
      ],
    });
    expect(threeWindows.rules.map((r) => r.name)).toEqual(['fw-200-per-10s', 'fw-5000-per-1h', 'fw-20000-per-1d']);
  });
});

describe('rules counted against another identity (rule option key)', () => {
  it("a per-user rule beside a global rule: the global one is shared by every key; reset forgets only the user's own", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 2, windowMs: 10_000, name: 'user' }),
        fixedWindow({ limit: 3, windowMs: 10_000, name: 'global', scope: 'global' }),
      ],
      clock,
    });
    expect((await limiter.tryAcquire('alice')).allowed).toBe(true);
    expect((await limiter.tryAcquire('alice')).allowed).toBe(true);
    expect(await limiter.tryAcquire('alice')).toMatchObject({ allowed: false, rule: 'user' });
    expect((await limiter.tryAcquire('bob')).allowed).toBe(true);
    const bob = await limiter.tryAcquire('bob');
    expect(bob).toMatchObject({ allowed: false, rule: 'global' });
    expect(bob.rules?.map((r) => [r.name, r.remaining])).toEqual([
      ['user', 1],
      ['global', 0],
    ]);
    await limiter.reset('alice');
    expect(await limiter.tryAcquire('alice')).toMatchObject({ allowed: false, rule: 'global' });
    clock.advance(10_000);
    expect((await limiter.tryAcquire('carol')).allowed).toBe(true);
  });

  it('a scope function derives the identity (a per-tenant rule)', async () => {
    const limiter = createLimiter({
      rules: [
        tokenBucket({ capacity: 5, refillPerSecond: 1, name: 'user' }),
        tokenBucket({ capacity: 3, refillPerSecond: 1, name: 'tenant', scope: (k) => k.split('/')[0] as string }),
      ],
      clock: new ManualClock(0),
    });
    const results = [];
    for (const key of ['acme/1', 'acme/2', 'acme/3', 'acme/4', 'initech/1'])
      results.push((await limiter.tryAcquire(key)).allowed);
    expect(results).toEqual([true, true, true, false, true]);
  });

  it('bad scope options and scope functions are typed errors', async () => {
    expect(() => fixedWindow({ limit: 1, windowMs: 1, scope: '' })).toThrow(/scope must be 1-512 characters, got 0/);
    expect(() => fixedWindow({ limit: 1, windowMs: 1, scope: 42 as never })).toThrow(
      /scope must be a string or a function, got 42/,
    );
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 1, windowMs: 1 }),
        fixedWindow({ limit: 1, windowMs: 1, name: 'x', scope: () => '' }),
      ],
    });
    await expect(limiter.tryAcquire('k')).rejects.toThrow(/its scope function must return a non-empty string, got ""/);
  });
});
