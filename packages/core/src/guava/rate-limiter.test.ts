import { describe, expect, it } from 'vitest';
import { ManualClock } from '../foundation/clock.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { RateLimiter } from './rate-limiter.js';

/**
 * Guava's RateLimiterTest, replayed through our facade. Guava's FakeStopwatch records each limiter sleep
 * as "R<seconds>" and each test sleep as "U<seconds>"; we do the same with a ManualClock.
 */
class Timeline {
  readonly clock = new ManualClock(0);
  readonly events: string[] = [];

  /** Like Guava's acquire(): reserve, then sleep the wait on the fake clock. */
  acquire(limiter: RateLimiter, permits = 1): void {
    const waitMs = limiter.reserve(permits);
    this.events.push(`R${(waitMs / 1000).toFixed(2)}`);
    this.clock.advance(waitMs);
  }

  sleepMillis(ms: number): void {
    this.events.push(`U${(ms / 1000).toFixed(2)}`);
    this.clock.advance(ms);
  }

  take(): string {
    return this.events.splice(0).join(', ');
  }
}

const repeat = (n: number, f: () => void) => {
  for (let i = 0; i < n; i++) f();
};

describe('RateLimiter (Guava conformance)', () => {
  it('simple: 5 qps gives 0, 0.2, 0.2', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(5, { clock: t.clock });
    repeat(3, () => t.acquire(limiter));
    expect(t.take()).toBe('R0.00, R0.20, R0.20');
  });

  it('immediate tryAcquire: the first permit at once, the second refused', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(1, { clock: t.clock });
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(false);
  });

  it('a near-zero rate (Number.MIN_VALUE) grants exactly once, even after a long sleep', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(Number.MIN_VALUE, { clock: t.clock });
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(false);
    t.sleepMillis(2 ** 31 - 1);
    expect(limiter.tryAcquire()).toBe(false);
  });

  it('invalid rates and permits throw typed errors naming the value', async () => {
    const clock = new ManualClock(0);
    for (const rate of [0, -1, NaN, -Infinity]) {
      expect(() => RateLimiter.create(rate, { clock })).toThrow(SluiceRangeError);
    }
    expect(() => RateLimiter.create('5' as unknown as number)).toThrow(SluiceTypeError);
    expect(() => RateLimiter.create(NaN)).toThrow(
      /permitsPerSecond must be a number > 0 \(Infinity allowed\), got NaN/,
    );
    const limiter = RateLimiter.create(1, { clock });
    for (const permits of [0, -1, 1.5, NaN, Infinity]) {
      await expect(limiter.acquire(permits)).rejects.toThrow(SluiceRangeError);
      expect(() => limiter.reserve(permits)).toThrow(SluiceRangeError);
      expect(() => limiter.tryAcquire(permits)).toThrow(SluiceRangeError);
    }
    expect(() => limiter.setRate(0)).toThrow(/permitsPerSecond/);
    expect(() => limiter.setRate(-10)).toThrow(SluiceRangeError);
    // None of the refused calls consumed anything.
    expect(limiter.tryAcquire()).toBe(true);
  });

  it('wait, then acquire: a permit saved during a sleep is granted at once', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(5, { clock: t.clock });
    t.acquire(limiter);
    t.sleepMillis(200);
    t.acquire(limiter);
    t.acquire(limiter);
    expect(t.take()).toBe('R0.00, U0.20, R0.00, R0.20');
  });

  it('one-second burst after a long idle', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(5, { clock: t.clock });
    t.sleepMillis(1000);
    t.sleepMillis(1000);
    t.acquire(limiter, 1);
    t.acquire(limiter, 1);
    t.acquire(limiter, 3);
    t.acquire(limiter, 1);
    t.acquire(limiter);
    expect(t.take()).toBe('U1.00, U1.00, R0.00, R0.00, R0.00, R0.00, R0.20');
  });

  it('weights 1, 1, 2, 4, 8, 1 at 1 qps: each request pays for the previous one', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(1, { clock: t.clock });
    for (const w of [1, 1, 2, 4, 8, 1]) t.acquire(limiter, w);
    expect(t.take()).toBe('R0.00, R1.00, R1.00, R2.00, R4.00, R8.00');
  });

  it('tryAcquire with no wait allowed', async () => {
    const t = new Timeline();
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = RateLimiter.create(5, { clock });
    expect(await limiter.tryAcquireWithin(0)).toBe(true);
    expect(await limiter.tryAcquireWithin(0)).toBe(false);
    expect(await limiter.tryAcquireWithin(0)).toBe(false);
    clock.advance(100);
    expect(await limiter.tryAcquireWithin(0)).toBe(false);
    expect(t.take()).toBe('');
  });

  it('tryAcquire with some wait allowed sleeps the wait', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = RateLimiter.create(5, { clock });
    expect(await limiter.tryAcquireWithin(0)).toBe(true);
    expect(await limiter.tryAcquireWithin(200)).toBe(true);
    expect(clock.now()).toBe(200);
    expect(await limiter.tryAcquireWithin(100)).toBe(false);
    clock.advance(100);
    expect(await limiter.tryAcquireWithin(100)).toBe(true);
  });

  it('tryAcquire with an overflowing timeout', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = RateLimiter.create(5, { clock });
    expect(await limiter.tryAcquireWithin(0)).toBe(true);
    clock.advance(100);
    expect(await limiter.tryAcquireWithin(Number.MAX_VALUE)).toBe(true);
    expect(await limiter.tryAcquireWithin(Infinity)).toBe(true);
  });

  it('tryAcquire with a negative timeout counts it as zero', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = RateLimiter.create(5, { clock });
    expect(await limiter.tryAcquireWithin(0, 5)).toBe(true);
    clock.advance(900);
    expect(await limiter.tryAcquireWithin(-Number.MAX_VALUE, 1)).toBe(false);
    clock.advance(100);
    expect(await limiter.tryAcquireWithin(-1000, 1)).toBe(true);
  });

  it('setRate mid-stream: the next request still pays at the old rate (bursty)', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(1, { clock: t.clock });
    t.acquire(limiter, 1);
    t.acquire(limiter, 1);
    limiter.setRate(2);
    t.acquire(limiter, 1);
    t.acquire(limiter, 2);
    t.acquire(limiter, 4);
    t.acquire(limiter, 1);
    expect(t.take()).toBe('R0.00, R1.00, R1.00, R0.50, R1.00, R2.00');
  });

  it('setRate and getRate, with invalid rates refused', () => {
    const limiter = RateLimiter.create(5, { clock: new ManualClock(0), warmupMs: 5000 });
    expect(limiter.getRate()).toBe(5);
    limiter.setRate(10);
    expect(limiter.getRate()).toBe(10);
    expect(() => limiter.setRate(0)).toThrow(SluiceRangeError);
    expect(() => limiter.setRate(-10)).toThrow(SluiceRangeError);
    expect(limiter.getRate()).toBe(10);
  });

  it('infinite rate (bursty): no waits, then a finite rate, then infinite again', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(Infinity, { clock: t.clock });
    t.acquire(limiter, Math.floor(2 ** 31 / 4));
    t.acquire(limiter, Math.floor(2 ** 31 / 2));
    t.acquire(limiter, 2 ** 31 - 1);
    expect(t.take()).toBe('R0.00, R0.00, R0.00');
    limiter.setRate(2);
    repeat(5, () => t.acquire(limiter));
    expect(t.take()).toBe('R0.00, R0.00, R0.00, R0.50, R0.50');
    limiter.setRate(Infinity);
    repeat(3, () => t.acquire(limiter));
    expect(t.take()).toBe('R0.50, R0.00, R0.00');
  });

  it('infinite rate (warming up): no waits, then a finite rate, then infinite again', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(Infinity, { clock: t.clock, warmupMs: 10_000 });
    t.acquire(limiter, Math.floor(2 ** 31 / 4));
    t.acquire(limiter, Math.floor(2 ** 31 / 2));
    t.acquire(limiter, 2 ** 31 - 1);
    expect(t.take()).toBe('R0.00, R0.00, R0.00');
    limiter.setRate(1);
    repeat(3, () => t.acquire(limiter));
    expect(t.take()).toBe('R0.00, R1.00, R1.00');
    limiter.setRate(Infinity);
    repeat(3, () => t.acquire(limiter));
    expect(t.take()).toBe('R1.00, R0.00, R0.00');
  });

  it('the warm-up curve, going cold again, and staying warm', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(2, { clock: t.clock, warmupMs: 4000, coldFactor: 3 });
    const curve = 'R0.00, R1.38, R1.13, R0.88, R0.63, R0.50, R0.50, R0.50';
    repeat(8, () => t.acquire(limiter));
    expect(t.take()).toBe(curve);
    t.sleepMillis(500);
    t.sleepMillis(4000);
    repeat(8, () => t.acquire(limiter));
    expect(t.take()).toBe(`U0.50, U4.00, ${curve}`);
    t.sleepMillis(500);
    t.sleepMillis(2000);
    repeat(8, () => t.acquire(limiter));
    expect(t.take()).toBe('U0.50, U2.00, R0.00, R0.50, R0.50, R0.50, R0.50, R0.50, R0.50, R0.50');
  });

  it('cold factor 10', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(5, { clock: t.clock, warmupMs: 4000, coldFactor: 10 });
    const curve = 'R0.00, R1.75, R1.26, R0.76, R0.30, R0.20, R0.20, R0.20'; // Guava's RateLimiterTest
    repeat(8, () => t.acquire(limiter));
    t.sleepMillis(200);
    t.sleepMillis(4000);
    repeat(8, () => t.acquire(limiter));
    t.sleepMillis(200);
    t.sleepMillis(1000);
    repeat(8, () => t.acquire(limiter));
    expect(t.take()).toBe(
      `${curve}, U0.20, U4.00, ${curve}, U0.20, U1.00, R0.00, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20`,
    );
  });

  it('cold factor 1: no warm-up at all', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(5, { clock: t.clock, warmupMs: 4000, coldFactor: 1 });
    const flat = 'R0.00, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20';
    repeat(8, () => t.acquire(limiter));
    t.sleepMillis(340);
    repeat(8, () => t.acquire(limiter));
    expect(t.take()).toBe(`${flat}, U0.34, ${flat}`);
  });

  it('warm-up with a rate change keeps the areas (times) while permits change', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(2, { clock: t.clock, warmupMs: 4000, coldFactor: 3 });
    repeat(8, () => t.acquire(limiter));
    t.sleepMillis(4500);
    repeat(3, () => t.acquire(limiter));
    limiter.setRate(4);
    t.acquire(limiter);
    repeat(4, () => t.acquire(limiter));
    t.sleepMillis(4250);
    repeat(11, () => t.acquire(limiter));
    expect(t.take()).toBe(
      [
        'R0.00, R1.38, R1.13, R0.88, R0.63, R0.50, R0.50, R0.50',
        'U4.50',
        'R0.00, R1.38, R1.13',
        'R0.88',
        'R0.34, R0.28, R0.25, R0.25',
        'U4.25',
        'R0.00, R0.72, R0.66, R0.59, R0.53, R0.47, R0.41',
        'R0.34, R0.28, R0.25, R0.25',
      ].join(', '),
    );
  });

  it('never more than one second of burst across a sequence of rates', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(1, { clock: t.clock });
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const measure = (permits: number): number => {
      const start = t.clock.now();
      let left = permits;
      while (left > 0) {
        const next = Math.max(1, random(left));
        left -= next;
        t.acquire(limiter, next);
      }
      t.acquire(limiter, 1); // repays any pending debt
      return t.clock.now() - start;
    };
    for (const rate of [1000, 1, 10, 1_000_000, 10, 1]) {
      t.sleepMillis(rate * 1000);
      limiter.setRate(rate);
      expect(measure(rate)).toBeLessThanOrEqual(1000);
      expect(measure(rate)).toBeGreaterThanOrEqual(1000);
    }
  });

  it('the time to warm up is honoured even with weights', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let trial = 0; trial < 20; trial++) {
      for (const coldFactor of [2, 3, 10]) {
        for (const qps of [4, 2, 1, 0.5, 0.1]) {
          const t = new Timeline();
          const warmupPermits = 10;
          const warmupMs = Math.trunc((((1 + coldFactor) * warmupPermits) / (2 * qps)) * 1000);
          const limiter = RateLimiter.create(qps, { clock: t.clock, warmupMs, coldFactor });
          let left = warmupPermits;
          while (left > 0) {
            const next = Math.max(1, random(left));
            left -= next;
            t.acquire(limiter, next);
          }
          t.acquire(limiter, 1);
          expect(Math.round(t.clock.now())).toBe(warmupMs);
        }
      }
    }
  });

  it('acquire sleeps on the clock and resolves to the ms waited; abort leaves nothing reserved', async () => {
    const clock = new ManualClock(0);
    const limiter = RateLimiter.create(5, { clock });
    expect(await limiter.acquire()).toBe(0);
    const waiting = limiter.acquire();
    expect(clock.pendingSleeps).toBe(1);
    clock.advance(200);
    expect(await waiting).toBe(200);
    const aborted = new AbortController();
    aborted.abort();
    await expect(limiter.acquire(1, aborted.signal)).rejects.toMatchObject({ code: 'ABORTED' });
    await expect(limiter.acquire(1, aborted.signal)).rejects.toBeInstanceOf(SluiceError);
    // Both aborted calls reserved nothing: the next request waits only for the one before it.
    expect(limiter.reserve()).toBe(200);
  });

  it('initialPermits and maxBurstSeconds shape the first burst', () => {
    const t = new Timeline();
    const limiter = RateLimiter.create(2, { clock: t.clock, maxBurstSeconds: 3, initialPermits: 4 });
    repeat(6, () => t.acquire(limiter));
    expect(t.take()).toBe('R0.00, R0.00, R0.00, R0.00, R0.00, R0.50');
    expect(() => RateLimiter.create(2, { initialPermits: 7, maxBurstSeconds: 3 })).toThrow(/initialPermits/);
    expect(() => RateLimiter.create(2, { coldFactor: 3 })).toThrow(/coldFactor applies only with warmupMs/);
  });
});
