import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { controlStepsArb, ruleMakerArb } from '@sluice/test-kit';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

describe('bans (blockMs, block, unblock) on the memory store', () => {
  it('a ban never ends before blockMs, and ends exactly then; denials during it consume nothing (property, ManualClock)', async () => {
    await fc.assert(
      fc.asyncProperty(
        ruleMakerArb(),
        fc.integer({ min: 1, max: 5_000 }),
        controlStepsArb(['consume']),
        async (make, blockMs, steps) => {
          const clock = new ManualClock(1_000_000);
          const banning = createLimiter({ rules: make({ blockMs, name: 'r' }), store: memoryStore({ clock }) });
          // The same rule without bans, fed only what the banning limiter decided outside a ban: if a denial or a
          // ban consumed anything, the two would stop agreeing.
          const oracle = createLimiter({ rules: make({ name: 'r' }), store: memoryStore({ clock }) });
          const bannedUntil = new Map<string, number>();
          for (const step of steps) {
            clock.advance(step.advanceMs);
            const now = clock.now();
            const d = await banning.tryAcquire(step.key, { permits: step.permits });
            const until = bannedUntil.get(step.key) ?? -Infinity;
            if (now < until) {
              // Inside a ban: denied, blocked, told to come back no sooner than its end.
              expect(d).toMatchObject({ allowed: false, blocked: true });
              expect(now + d.retryAfterMs).toBeGreaterThanOrEqual(until - 1e-6);
              continue;
            }
            const o = await oracle.tryAcquire(step.key, { permits: step.permits });
            expect(d.allowed).toBe(o.allowed);
            if (!d.allowed) {
              // The denial that starts the ban says so, with at least blockMs to wait.
              expect(d.blocked).toBe(true);
              expect(d.retryAfterMs).toBeGreaterThanOrEqual(blockMs);
              bannedUntil.set(step.key, now + blockMs);
            } else expect(d.blocked).toBeUndefined();
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('the login case: 5 per 15 min, then a 1 h ban that outlasts the window; peek reports it, unblock lifts it', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 5, windowMs: 15 * 60_000, blockMs: 3_600_000 }),
      clock,
    });
    for (let i = 0; i < 5; i++) expect((await limiter.tryAcquire('alice:1.2.3.4')).allowed).toBe(true);
    clock.advance(1_000);
    const sixth = await limiter.tryAcquire('alice:1.2.3.4');
    expect(sixth).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 3_600_000, remaining: 0 });
    clock.advance(30 * 60_000); // the window reset long ago; the ban has not
    expect(await limiter.tryAcquire('alice:1.2.3.4')).toMatchObject({
      allowed: false,
      blocked: true,
      retryAfterMs: 30 * 60_000,
    });
    expect(await limiter.peek('alice:1.2.3.4')).toMatchObject({
      allowed: false,
      blocked: true,
      retryAfterMs: 30 * 60_000,
    });
    expect((await limiter.tryAcquire('bob:1.2.3.4')).allowed).toBe(true); // another key is not banned
    await limiter.unblock('alice:1.2.3.4');
    expect(await limiter.tryAcquire('alice:1.2.3.4')).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('a ban ends at exactly blockMs: a millisecond before it is refused, at it the request passes', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000, blockMs: 10_000 }), clock });
    await limiter.tryAcquire('k');
    const started = await limiter.tryAcquire('k');
    expect(started.retryAfterMs).toBe(10_000);
    clock.advance(9_999);
    expect(await limiter.tryAcquire('k')).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 1 });
    clock.advance(1);
    expect(await limiter.tryAcquire('k')).toMatchObject({ allowed: true });
  });

  it('block(key, ms) bans any key, never shortens a longer ban, and reset() lifts it with the usage', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 3, refillPerSecond: 1 }), clock });
    await limiter.block('mallory', 60_000);
    expect(await limiter.tryAcquire('mallory')).toMatchObject({
      allowed: false,
      blocked: true,
      retryAfterMs: 60_000,
      rule: 'tb-3-1ps',
    });
    await limiter.block('mallory', 1_000); // shorter: the longer ban stays
    expect((await limiter.tryAcquire('mallory')).retryAfterMs).toBe(60_000);
    await limiter.block('mallory', 120_000); // longer: extends
    expect((await limiter.tryAcquire('mallory')).retryAfterMs).toBe(120_000);
    await limiter.reset('mallory');
    expect(await limiter.tryAcquire('mallory')).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('a policy: the banning rule reports the ban; rules that would allow keep their numbers; a global rule cannot ban', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 2, windowMs: 1_000, name: 'second', blockMs: 5_000 }),
        fixedWindow({ limit: 100, windowMs: 60_000, name: 'minute' }),
      ],
      clock,
    });
    await limiter.tryAcquire('k');
    await limiter.tryAcquire('k');
    const d = await limiter.tryAcquire('k');
    expect(d).toMatchObject({ allowed: false, blocked: true, rule: 'second', retryAfterMs: 5_000 });
    expect(d.rules?.find((r) => r.name === 'minute')).toMatchObject({ allowed: true, remaining: 98 });
    expect(() => fixedWindow({ limit: 1, windowMs: 1_000, scope: 'global', blockMs: 1_000 })).toThrow(SluiceRangeError);
  });

  it('tryAcquire with a timeout does not wait out a ban, and acquire() rejects rather than waiting an hour', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), clock });
    await limiter.block('k', 3_600_000);
    expect(await limiter.tryAcquire('k', { maxWaitMs: 7_200_000 })).toMatchObject({ allowed: false, blocked: true });
    expect(clock.pendingSleeps).toBe(0);
    await expect(limiter.acquire('k')).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
  });

  it('a ban survives a flood of new keys that evicts usage (bans are held apart)', async () => {
    const clock = new ManualClock(0);
    const store = memoryStore({ maxKeys: 1_000, clock });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000, blockMs: 3_600_000 }),
      store,
    });
    await limiter.tryAcquire('victim');
    expect((await limiter.tryAcquire('victim')).blocked).toBe(true);
    for (let i = 0; i < 5_000; i++) await limiter.tryAcquire(`flood:${i}`);
    expect(await limiter.tryAcquire('victim')).toMatchObject({ allowed: false, blocked: true });
  });

  it('bad input: a negative, NaN or endless blockMs, block() with a bad duration: typed errors, nothing banned', async () => {
    for (const blockMs of [-1, Number.NaN, Infinity, 1e14])
      expect(() => fixedWindow({ limit: 1, windowMs: 1_000, blockMs })).toThrow(SluiceRangeError);
    expect(() => fixedWindow({ limit: 1, windowMs: 1_000, blockMs: '1h' as never })).toThrow(SluiceTypeError);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), clock: new ManualClock(0) });
    for (const ms of [0, -5, Number.NaN, Infinity])
      await expect(limiter.block('k', ms)).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.block('k', '5' as never)).rejects.toBeInstanceOf(SluiceTypeError);
    await expect(limiter.block('', 5)).rejects.toBeInstanceOf(SluiceRangeError);
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
  });
});

describe('bans beside the access lists (memory store)', () => {
  it("an operator's block outranks the allow list: an allowed key (or address) that is banned is refused, and peek says so", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }), clock });
    await limiter.allow(['vip', '10.0.0.0/8']);
    await limiter.block('vip', 60_000);
    // The reproduction: every one of these passed, and peek showed the allow entry.
    for (let i = 0; i < 5; i++)
      expect(await limiter.tryAcquire('vip')).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 60_000 });
    const seen = await limiter.peek('vip');
    expect(seen).toMatchObject({ allowed: false, blocked: true });
    expect(seen.access).toBeUndefined(); // the ban decided; the allow entry's reason never reaches a client
    await expect(limiter.acquire('vip')).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
    // Allowed by its address: the key's ban holds too; a key not banned is let through by the range.
    await limiter.block('user:7', 60_000);
    expect(await limiter.tryAcquire('user:7', { address: '10.1.2.3' })).toMatchObject({ blocked: true });
    expect((await limiter.tryAcquire('user:8', { address: '10.1.2.3' })).access?.list).toBe('allow');
    // Allowed after the ban was set: the ban still holds. Lifted: the allow list decides again, nothing taken.
    await limiter.block('late', 1_000);
    await limiter.allow('late');
    expect((await limiter.tryAcquire('late')).blocked).toBe(true);
    await limiter.unblock('vip');
    for (let i = 0; i < 5; i++) expect((await limiter.tryAcquire('vip')).access?.list).toBe('allow');
    clock.advance(1_000);
    expect((await limiter.tryAcquire('late')).access?.list).toBe('allow');
    await limiter.unlist('vip');
    expect((await limiter.peek('vip')).remaining).toBe(2);
  });

  it('a ban with a deny list: the deny answers while listed, the ban after it is unlisted, until unblocked', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }), clock });
    await limiter.deny('k', { reason: 'abuse' });
    await limiter.block('k', 60_000);
    expect(await limiter.tryAcquire('k')).toMatchObject({ allowed: false, access: { list: 'deny', reason: 'abuse' } });
    await limiter.unlist('k');
    expect(await limiter.tryAcquire('k')).toMatchObject({ allowed: false, blocked: true });
    expect(await limiter.peek('k')).toMatchObject({ allowed: false, blocked: true });
    await limiter.unblock('k');
    expect(await limiter.tryAcquire('k')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("with plans: an allowed key's explicit ban holds whatever its plan; a rule's blockMs ban gives way to the allow", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      plans: {
        free: fixedWindow({ name: 'api', limit: 1, windowMs: 60_000, blockMs: 600_000 }),
        pro: fixedWindow({ name: 'api', limit: 100, windowMs: 60_000 }),
      },
      clock,
    });
    await limiter.allow('tenant-1');
    await limiter.block('tenant-1', 60_000);
    for (const plan of ['free', 'pro'])
      expect(await limiter.tryAcquire('tenant-1', { plan })).toMatchObject({ allowed: false, blocked: true });
    expect(await limiter.peek('tenant-1', { plan: 'pro' })).toMatchObject({ blocked: true });
    await limiter.tryAcquire('tenant-2', { plan: 'free' });
    expect((await limiter.tryAcquire('tenant-2', { plan: 'free' })).blocked).toBe(true);
    await limiter.allow('tenant-2');
    for (const plan of ['free', 'pro'])
      expect((await limiter.tryAcquire('tenant-2', { plan })).access?.list).toBe('allow');
  });
});
