import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { ManualClock } from '../../foundation/clock.js';
import type { Decision } from '../../foundation/decision.js';
import { RateLimitedError, SluiceError, SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { createLimiter } from '../../engine/limiter.js';
import { memoryStore } from '../../engine/memory-store.js';
import { countLimit, rateLimited, smoothRateLimit } from './index.js';

function thrown(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('@rateLimited', () => {
  it('passes allowed calls through with their arguments, this and return value; throws RateLimitedError when denied', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 1_000 }),
      store: memoryStore({ clock }),
    });
    let ran = 0;
    class Greeter {
      constructor(readonly greeting: string) {}
      @rateLimited({ limiter })
      async greet(name: string, punctuation = '!'): Promise<string> {
        ran++;
        return `${this.greeting}, ${name}${punctuation}`;
      }
    }
    const g = new Greeter('Hello');
    expect(await g.greet('Ada')).toBe('Hello, Ada!');
    expect(await g.greet('Alan', '?')).toBe('Hello, Alan?');
    const error = await thrown(() => g.greet('Grace'));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toBeInstanceOf(SluiceError);
    const decision = (error as RateLimitedError).decision;
    expect((error as RateLimitedError).code).toBe('RATE_LIMITED');
    expect(decision).toMatchObject({
      allowed: false,
      limit: 2,
      remaining: 0,
      retryAfterMs: 1_000,
      rule: 'fw-2-per-1s',
    });
    expect(ran).toBe(2); // a denied call never runs the method
    // The default key is the method's name: every instance shares the bucket.
    expect((await limiter.peek('Greeter.greet')).remaining).toBe(0);
    clock.advance(1_000);
    expect(await new Greeter('Hi').greet('Grace')).toBe('Hi, Grace!');
  });

  it('keys by a function of the arguments and charges permits from them', async () => {
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 3, windowMs: 60_000 }),
      store: memoryStore({ clock: new ManualClock(0) }),
    });
    class Mailer {
      @rateLimited({
        limiter,
        key: ({ args }) => `to:${String(args[0])}`,
        permits: ({ args }) => (args[1] as string[]).length,
      })
      async send(_to: string, attachments: string[]): Promise<number> {
        return attachments.length;
      }
    }
    const m = new Mailer();
    expect(await m.send('a@x', ['1', '2'])).toBe(2);
    expect(await thrown(() => m.send('a@x', ['1', '2']))).toBeInstanceOf(RateLimitedError);
    expect(await m.send('a@x', ['1'])).toBe(1);
    expect(await m.send('b@x', ['1', '2', '3'])).toBe(3);
  });

  it('waits up to maxWaitMs and succeeds when the limit frees up (ManualClock)', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 1, refillPerSecond: 1 }),
      store: memoryStore({ clock }),
    });
    class Job {
      @rateLimited({ limiter, key: 'job', maxWaitMs: 1_500 })
      async run(): Promise<number> {
        return clock.now();
      }
      @rateLimited({ limiter, key: 'job', maxWaitMs: 500 })
      async runImpatient(): Promise<number> {
        return clock.now();
      }
    }
    const job = new Job();
    expect(await job.run()).toBe(0);
    const waited = await job.run(); // empty bucket: sleeps the 1 s refill, then runs
    expect(waited).toBeGreaterThanOrEqual(1_000);
    expect(waited).toBeLessThanOrEqual(1_002 + 1); // plus at most the retry jitter
    const error = await thrown(() => job.runImpatient()); // needs ~1 s, may wait 0.5 s
    expect(error).toBeInstanceOf(RateLimitedError);
  });

  it('static methods are keyed by their class; errors of the method itself pass through untouched', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 60_000 }) });
    const boom = new Error('boom');
    // biome-ignore lint/complexity/noStaticOnlyClass: the decorator on a static method is what is tested.
    class Repo {
      @rateLimited({ limiter })
      static async load(): Promise<string> {
        throw boom;
      }
    }
    expect(await thrown(() => Repo.load())).toBe(boom);
    expect((await limiter.peek('Repo.load')).remaining).toBe(4);
  });

  it('validates its options when the class is defined', () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 60_000 }) });
    expect(() => rateLimited({ limiter: {} as never })).toThrow(SluiceTypeError);
    expect(() => rateLimited({ limiter, key: 42 as never })).toThrow(
      /key must be a string or a function of the call, got 42/,
    );
    expect(() => rateLimited({ limiter, permits: 0 })).toThrow(SluiceRangeError);
    expect(() => rateLimited({ limiter, maxWaitMs: Number.NaN })).toThrow(/maxWaitMs must be/);
  });

  it('an invalid permits function result is a typed error and consumes nothing', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 60_000 }) });
    class Svc {
      @rateLimited({ limiter, key: 'svc', permits: () => Number.NaN })
      async call(): Promise<void> {}
    }
    expect(await thrown(() => new Svc().call())).toBeInstanceOf(SluiceRangeError);
    expect((await limiter.peek('svc')).remaining).toBe(5);
  });
});

describe('legacy decorators (experimentalDecorators, as NestJS compiles)', () => {
  it('the same decorator applied the legacy way, (prototype, name, descriptor): keyed, limited and this-preserving', async () => {
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 60_000 }),
      clock: new ManualClock(0),
    });
    class Mailer {
      readonly from = 'noreply';
      async send(to: string): Promise<string> {
        return `${this.from} -> ${to}`;
      }
    }
    // What tsc emits for `@rateLimited(...) async send(...)` under experimentalDecorators.
    const decorate = rateLimited({ limiter, key: ({ args }) => `to:${String(args[0])}` });
    const descriptor = Object.getOwnPropertyDescriptor(Mailer.prototype, 'send') as TypedPropertyDescriptor<
      (to: string) => Promise<string>
    >;
    Object.defineProperty(Mailer.prototype, 'send', decorate(Mailer.prototype, 'send', descriptor));
    const mailer = new Mailer();
    expect(await mailer.send('a')).toBe('noreply -> a');
    expect(await mailer.send('a')).toBe('noreply -> a');
    await expect(mailer.send('a')).rejects.toBeInstanceOf(RateLimitedError);
    expect(await mailer.send('b')).toBe('noreply -> b');
    const getter = { get: () => 1, configurable: true } as TypedPropertyDescriptor<never>;
    expect(() => decorate(Mailer.prototype, 'x', getter)).toThrow(SluiceTypeError);
  });
});

describe('the seed annotations', () => {
  it('countLimit: N calls per period per key (fixed window)', async () => {
    const clock = new ManualClock(0);
    class Codes {
      @countLimit({ limit: 2, windowMs: 10_000, key: ({ args }) => `phone:${String(args[0])}`, clock })
      async send(phone: string): Promise<string> {
        return phone;
      }
    }
    const codes = new Codes();
    expect(await codes.send('555')).toBe('555');
    expect(await codes.send('555')).toBe('555');
    const error = (await thrown(() => codes.send('555'))) as RateLimitedError;
    expect(error.decision.retryAfterMs).toBe(10_000);
    expect(await codes.send('556')).toBe('556');
    clock.advance(10_000);
    expect(await codes.send('555')).toBe('555');
  });

  it('smoothRateLimit: calls spaced at the rate, with the burst saved up while idle (SmoothBursty)', async () => {
    const clock = new ManualClock(0);
    class Codes {
      @smoothRateLimit({ permitsPerSecond: 1 / 5, maxBurstSeconds: 10, clock })
      async send(): Promise<void> {}
    }
    const codes = new Codes();
    await codes.send();
    const denied: Decision = ((await thrown(() => codes.send())) as RateLimitedError).decision;
    expect(denied.retryAfterMs).toBe(5_000);
    clock.advance(20_000); // idle: 5 s to pay the first call back, then 2 permits (10 s of burst) saved
    await codes.send();
    await codes.send();
    await codes.send(); // Guava grants one more at once and makes the next caller pay for it
    expect(await thrown(() => codes.send())).toBeInstanceOf(RateLimitedError);
  });
});
