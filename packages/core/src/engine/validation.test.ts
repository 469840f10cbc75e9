import { describe, expect, it } from 'vitest';
import type { AlgorithmKind } from '../algorithms/algorithm.js';
import { calendarWindow } from '../algorithms/calendar-window.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { gcra } from '../algorithms/gcra.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { smoothBursty, smoothWarmingUp } from '../algorithms/smooth.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import { RateLimiter } from '../guava/rate-limiter.js';

const BAD_NUMBERS: Array<[string, unknown]> = [
  ['NaN', NaN],
  ['negative', -1],
  ['zero', 0],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
];

/**
 * Each factory with valid options, and which option is an integer count (fractions refused). Typed by
 * AlgorithmKind: a new algorithm does not compile until its options are here.
 */
const FACTORIES: {
  readonly [K in AlgorithmKind]: {
    make: (o: Record<string, unknown>) => unknown;
    valid: Record<string, unknown>;
    integers: string[];
  };
} = {
  fixedWindow: {
    make: (o) => fixedWindow(o as never),
    valid: { limit: 10, windowMs: 1000 },
    integers: ['limit', 'windowMs'],
  },
  calendarWindow: {
    make: (o) => calendarWindow({ period: 'day', ...o } as never),
    valid: { limit: 10 },
    integers: ['limit'],
  },
  slidingWindowLog: {
    make: (o) => slidingWindowLog(o as never),
    valid: { limit: 10, windowMs: 1000 },
    integers: ['limit', 'windowMs'],
  },
  slidingWindowCounter: {
    make: (o) => slidingWindowCounter(o as never),
    valid: { limit: 10, windowMs: 1000 },
    integers: ['limit', 'windowMs'],
  },
  tokenBucket: {
    make: (o) => tokenBucket(o as never),
    valid: { capacity: 10, refillPerSecond: 2.5 },
    integers: ['capacity'],
  },
  leakyBucket: {
    make: (o) => leakyBucket(o as never),
    valid: { capacity: 10, leakPerSecond: 2.5 },
    integers: ['capacity'],
  },
  gcra: { make: (o) => gcra(o as never), valid: { permitsPerSecond: 2.5, burst: 10 }, integers: ['burst'] },
  smoothBursty: { make: (o) => smoothBursty(o as never), valid: { permitsPerSecond: 2.5 }, integers: [] },
  smoothWarmingUp: {
    make: (o) => smoothWarmingUp(o as never),
    valid: { permitsPerSecond: 2.5, warmupMs: 1000 },
    integers: [],
  },
};

describe('option validation', () => {
  for (const [name, f] of Object.entries(FACTORIES)) {
    describe(name, () => {
      it('accepts its valid options', () => expect(() => f.make(f.valid)).not.toThrow());

      for (const option of Object.keys(f.valid)) {
        for (const [label, bad] of BAD_NUMBERS) {
          it(`refuses ${option} = ${label} with a typed error naming it`, () => {
            const call = () => f.make({ ...f.valid, [option]: bad });
            expect(call).toThrow(SluiceRangeError);
            expect(call).toThrow(
              new RegExp(
                `^${name}: ${option} must be .*, got ${label === 'negative' ? '-1' : label === 'zero' ? '0' : label}$`,
              ),
            );
            try {
              call();
            } catch (e) {
              expect(e).toMatchObject({ argument: option, value: bad, code: 'INVALID_ARGUMENT' });
            }
          });
        }
        it(`refuses ${option} of the wrong type`, () => {
          expect(() => f.make({ ...f.valid, [option]: '10' })).toThrow(SluiceTypeError);
          expect(() => f.make({ ...f.valid, [option]: null })).toThrow(/got null/);
        });
      }
      for (const option of f.integers) {
        it(`refuses a fractional ${option}`, () => {
          expect(() => f.make({ ...f.valid, [option]: 2.5 })).toThrow(
            new RegExp(`${option} must be an integer >= 1, got 2.5`),
          );
        });
      }
      it('refuses a missing options object', () => {
        expect(() => f.make(undefined as never)).toThrow(SluiceTypeError);
      });
    });
  }

  it('cross-field and enum checks', () => {
    expect(() => tokenBucket({ capacity: 5, refillPerSecond: 1, initialPermits: 6 })).toThrow(
      /initialPermits must be at most capacity \(5\), got 6/,
    );
    expect(() => tokenBucket({ capacity: 5, refillPerSecond: 1, maxDebt: -1 })).toThrow(/maxDebt/);
    expect(() => leakyBucket({ capacity: 5, leakPerSecond: 1, mode: 'drop' as never })).toThrow(
      /mode must be 'police' or 'shape', got "drop"/,
    );
    expect(() => smoothWarmingUp({ permitsPerSecond: 1, warmupMs: 1000, coldFactor: 0.5 })).toThrow(
      /coldFactor must be >= 1/,
    );
    expect(() => fixedWindow({ limit: 1, windowMs: 1, name: 'has space' })).toThrow(/name must be 1-64/);
    expect(() => createLimiter({ rules: [] })).toThrow(/at least one rule/);
    expect(() => createLimiter({ rules: {} as never })).toThrow(/rules must be a rule/);
    // The option's old name is refused with the new one, not ignored.
    expect(() => createLimiter({ algorithm: fixedWindow({ limit: 1, windowMs: 1_000 }) } as never)).toThrow(
      /no option "algorithm".*the options are rules, plans/,
    );
    expect(() => createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1 }), prefix: 'a{b}' })).toThrow(/prefix/);
    expect(() => createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1 }), store: {} as never })).toThrow(
      /store must be/,
    );
    expect(() => memoryStore({ maxKeys: 0 })).toThrow(/maxKeys must be an integer >= 1, got 0/);
    expect(() =>
      createLimiter({
        rules: fixedWindow({ limit: 1, windowMs: 1 }),
        store: memoryStore(),
        clock: new ManualClock(0),
      }),
    ).toThrow(/clock must be the clock the store was created with/);
  });
});

describe('bad input to a limiter leaves its state untouched', () => {
  const setup = async () => {
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 1 }),
      clock: new ManualClock(0),
    });
    await limiter.tryAcquire('k', { permits: 3 });
    return { limiter, before: await limiter.peek('k') };
  };

  const badPermits: Array<[string, unknown]> = [
    ['NaN', NaN],
    ['negative', -1],
    ['zero', 0],
    ['Infinity', Infinity],
    ['fractional', 1.5],
    ['2^53 + 1', 2 ** 53 + 1],
    ['a string', '2'],
    ['-0', -0],
  ];
  for (const [label, permits] of badPermits) {
    it(`permits ${label}: a typed error naming permits, nothing consumed`, async () => {
      const { limiter, before } = await setup();
      await expect(limiter.tryAcquire('k', { permits: permits as number })).rejects.toMatchObject({
        argument: 'permits',
        code: 'INVALID_ARGUMENT',
      });
      await expect(limiter.acquire('k', { permits: permits as number })).rejects.toMatchObject({ argument: 'permits' });
      expect(await limiter.peek('k')).toEqual(before);
    });
  }

  const badKeys: Array<[string, unknown, typeof SluiceTypeError | typeof SluiceRangeError]> = [
    ['empty', '', SluiceRangeError],
    ['10 KB', 'x'.repeat(10 * 1024), SluiceRangeError],
    ['a number', 42, SluiceTypeError],
    ['undefined', undefined, SluiceTypeError],
    ['null', null, SluiceTypeError],
    ['an object', { id: 1 }, SluiceTypeError],
  ];
  for (const [label, key, errorClass] of badKeys) {
    it(`key ${label}: a typed error naming the key, nothing consumed`, async () => {
      const { limiter, before } = await setup();
      for (const call of [
        () => limiter.tryAcquire(key as string),
        () => limiter.acquire(key as string),
        () => limiter.peek(key as string),
        () => limiter.reset(key as string),
      ]) {
        await expect(call()).rejects.toBeInstanceOf(errorClass);
        await expect(call()).rejects.toMatchObject({ argument: 'key' });
      }
      expect(await limiter.peek('k')).toEqual(before);
    });
  }

  it('a 10 KB key is refused with its length, not echoed', async () => {
    const { limiter } = await setup();
    await expect(limiter.tryAcquire('x'.repeat(10_240))).rejects.toThrow(
      'key must be at most 512 characters, got 10240',
    );
  });

  it('bad maxWaitMs and options are typed errors, nothing consumed', async () => {
    const { limiter, before } = await setup();
    for (const maxWaitMs of [NaN, -1, '5']) {
      await expect(limiter.tryAcquire('k', { maxWaitMs: maxWaitMs as number })).rejects.toMatchObject({
        argument: 'maxWaitMs',
      });
    }
    await expect(limiter.tryAcquire('k', 5 as never)).rejects.toBeInstanceOf(SluiceTypeError);
    expect(await limiter.peek('k')).toEqual(before);
  });
});

describe('clock and signal options (found by the hostile-input suite)', () => {
  it('a clock without now() is a typed error naming it, wherever a clock is taken', () => {
    expect(() => memoryStore({ clock: 0 as never })).toThrow(/clock must be a Clock/);
    expect(() => createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), clock: {} as never })).toThrow(
      SluiceTypeError,
    );
    expect(() => RateLimiter.create(1, { clock: { now: 5 } as never })).toThrow(/clock must be a Clock/);
    expect(() => memoryStore({ clock: { now: () => 0, sleep: 1 } as never })).toThrow(/clock.sleep must be a function/);
  });

  it('a signal that is not an AbortSignal is a typed error, and consumes nothing', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }) });
    await expect(limiter.tryAcquire('k', { signal: 0 as never, maxWaitMs: 5 })).rejects.toThrow(
      /signal must be an AbortSignal, got 0/,
    );
    await expect(limiter.acquire('k', { signal: {} as never })).rejects.toThrow(SluiceTypeError);
    expect((await limiter.peek('k')).remaining).toBe(1);
  });
});
