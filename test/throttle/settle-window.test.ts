/**
 * A settlement after a window boundary gives back to the window that counted the grant, or nowhere: a call
 * charged 100 tokens at 00:00:59 and settled to 0 at 00:01:01 once let the next minute grant 200 of a limit
 * of 100 (the refund went into the new minute's count). Each window rule (fixedWindow, calendarWindow,
 * slidingWindowCounter, slidingWindowLog), through a throttle's ticket.settle, limiter.refund with the grant's
 * time and the HTTP adapters' after-response settlements (skipFailedRequests, skipSuccessfulRequests,
 * permitsAfterResponse), on the memory store and on Redis deciding on the same ManualClock. Inside the window the
 * refund still lands.
 */
import {
  type Algorithm,
  type Limiter,
  ManualClock,
  calendarWindow,
  createLimiter,
  fixedWindow,
  memoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  throttle,
} from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { describe, expect, it } from 'vitest';
import { Answer, get, startServer } from '../http/servers.js';
import { useTestRedis } from '../harness/use-redis.js';
import { closeAfterEach } from '../harness/closers.js';

const testRedis = useTestRedis();
const closers = closeAfterEach();
let n = 0;

type StoreKind = 'memory' | 'redis';

/** A limiter of `rule` on `kind`, deciding on `clock` (Redis takes its time from the same clock). */
function limiterOn(kind: StoreKind, rule: Algorithm, clock: ManualClock): Limiter {
  const store =
    kind === 'memory'
      ? memoryStore({ clock })
      : redisStore({ redis: testRedis().redis, clock, denyCache: false, timeoutMs: 5_000 });
  const limiter = createLimiter({ rules: rule, store, clock, prefix: `settle-window-${process.pid}-${n++}` });
  closers.push(() => limiter.close());
  return limiter;
}

const DAY = 86_400_000;
const MIDNIGHT = Date.UTC(2026, 10, 27);

/**
 * One timeline per rule: a call A charged `charge` at `chargeAt`; at `otherAt` (past the window A was counted
 * in) another call B charged `other` is granted; A settles to 0 at `otherAt`; at `checkAt` a request of
 * `check` permits must be denied: the window B is in holds B, not B less A's refund. `insideAt` is a time in
 * A's window: a settlement there gives A's permits back.
 */
interface Timeline {
  readonly rule: () => Algorithm;
  readonly start: number;
  readonly chargeAt: number;
  readonly charge: number;
  readonly otherAt: number;
  readonly other: number;
  readonly checkAt: number;
  readonly check: number;
  readonly insideAt: number;
}

const timelines: Record<string, Timeline> = {
  fixedWindow: {
    rule: () => fixedWindow({ limit: 100, windowMs: 60_000, name: 'tpm' }),
    start: 0,
    chargeAt: 59_000,
    charge: 100,
    otherAt: 61_000,
    other: 100,
    checkAt: 61_000,
    check: 1,
    insideAt: 59_500,
  },
  calendarWindow: {
    rule: () => calendarWindow({ limit: 100, period: 'day', name: 'tpd' }),
    start: MIDNIGHT,
    chargeAt: MIDNIGHT + DAY - 1_000,
    charge: 100,
    otherAt: MIDNIGHT + DAY + 1_000,
    other: 100,
    checkAt: MIDNIGHT + DAY + 1_000,
    check: 1,
    insideAt: MIDNIGHT + DAY - 500,
  },
  // The previous minute's 50 is weighted down as the minute goes; the current one's 50 (B) counts whole:
  // near its end, B's minute has room for 50 more, not 99.
  slidingWindowCounter: {
    rule: () => slidingWindowCounter({ limit: 100, windowMs: 60_000, name: 'tpm' }),
    start: 0,
    chargeAt: 59_000,
    charge: 50,
    otherAt: 61_000,
    other: 50,
    checkAt: 119_900,
    check: 51,
    insideAt: 59_500,
  },
  // A's grant left the log a minute after it was made; B's 100 is in every window B is in.
  slidingWindowLog: {
    rule: () => slidingWindowLog({ limit: 100, windowMs: 60_000, name: 'tpm' }),
    start: 1_000,
    chargeAt: 1_000,
    charge: 100,
    otherAt: 61_500,
    other: 100,
    checkAt: 62_000,
    check: 1,
    insideAt: 31_000,
  },
};

describe.each(['memory', 'redis'] as const)('on the %s store', (kind) => {
  describe.each(Object.keys(timelines))('%s', (name) => {
    const line = timelines[name] as Timeline;

    it("ticket.settle after the window boundary gives nothing to the next window; inside it, A's permits come back", async () => {
      const clock = new ManualClock(line.start);
      const limiter = limiterOn(kind, line.rule(), clock);
      const t = throttle({ limiter });
      closers.push(() => t.close());
      clock.set(line.chargeAt);
      const a = await t.run((ticket) => ticket, { permits: line.charge });
      clock.set(line.otherAt);
      await t.run(() => undefined, { permits: line.other, maxWaitMs: 0 });
      await a.settle(0);
      clock.set(line.checkAt);
      expect((await limiter.tryAcquire('default', { permits: line.check })).allowed).toBe(false);

      // Inside A's window the settlement lands: the whole charge is there to take again.
      const inside = new ManualClock(line.start);
      const own = limiterOn(kind, line.rule(), inside);
      const u = throttle({ limiter: own });
      closers.push(() => u.close());
      inside.set(line.chargeAt);
      const b = await u.run((ticket) => ticket, { permits: line.charge });
      inside.set(line.insideAt);
      await b.settle(0);
      expect((await own.tryAcquire('default', { permits: line.charge })).allowed).toBe(true);
    });

    it('ticket.settle up after the boundary charges the window in force (never over the limit, as the dropped refund)', async () => {
      const clock = new ManualClock(line.start);
      const limiter = limiterOn(kind, line.rule(), clock);
      const t = throttle({ limiter });
      closers.push(() => t.close());
      clock.set(line.chargeAt);
      const a = await t.run((ticket) => ticket, { permits: 1 });
      clock.set(line.checkAt);
      const limit = line.rule().limit;
      // Settled to 1 + the limit: the extra (the whole limit) is spent in the window A settles in, which then
      // grants nothing.
      await a.settle(1 + limit);
      expect((await limiter.tryAcquire('default', { permits: 1 })).allowed).toBe(false);
    });

    it('limiter.refund with the grant time (grantedMsAgo) after the boundary gives nothing to the next window', async () => {
      const clock = new ManualClock(line.start);
      const limiter = limiterOn(kind, line.rule(), clock);
      clock.set(line.chargeAt);
      const askedAt = clock.now();
      const decision = await limiter.tryAcquire('k', { permits: line.charge });
      expect(decision.allowed).toBe(true);
      clock.set(line.otherAt);
      expect((await limiter.tryAcquire('k', { permits: line.other })).allowed).toBe(true);
      await limiter.refund('k', line.charge, { decision, grantedMsAgo: clock.now() - askedAt });
      clock.set(line.checkAt);
      expect((await limiter.tryAcquire('k', { permits: line.check })).allowed).toBe(false);
    });
  });

  /**
   * The HTTP adapters' settlements run after the response: the route moves the clock past the window's end
   * and fills the new window before it answers. The settlement is awaited through the limiter it calls.
   */
  describe.each([
    ['skipFailedRequests', { skipFailedRequests: true }, 500],
    ['skipSuccessfulRequests', { skipSuccessfulRequests: true }, 200],
    ['permitsAfterResponse -1', { permitsAfterResponse: () => -1 }, 200],
  ] as const)('HTTP %s', (_label, settlement, status) => {
    it.each(Object.keys(timelines))(
      "a %s window: the request's refund after the boundary goes nowhere",
      async (name) => {
        const line = timelines[name] as Timeline;
        const clock = new ManualClock(line.start);
        const real = limiterOn(kind, line.rule(), clock);
        const { limiter, settled } = heard(real);
        const server = await startServer(
          'node:http',
          { limiter, key: () => 'k', permits: line.charge, ...settlement, onAccountingError: () => {} } as never,
          async () => {
            clock.set(line.otherAt);
            expect((await real.tryAcquire('k', { permits: line.other })).allowed).toBe(true);
            return new Answer(status, {});
          },
        );
        closers.push(() => server.close());
        clock.set(line.chargeAt);
        expect((await get(server.url)).status).toBe(status);
        await settled;
        clock.set(line.checkAt);
        expect((await real.tryAcquire('k', { permits: line.check })).allowed).toBe(false);
      },
    );
  });
});

/** The limiter as the adapter sees it, and a promise of its first refund's end (what the adapter settles with). */
function heard(limiter: Limiter): { limiter: Limiter; settled: Promise<void> } {
  let done: () => void = () => {};
  const settled = new Promise<void>((resolve) => {
    done = resolve;
  });
  const seen = new Proxy(limiter, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'refund')
        return (...args: Parameters<Limiter['refund']>) => target.refund(...args).finally(done);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { limiter: seen, settled };
}
