/**
 * Every public entry point that takes options refuses one it does not know, by name, listing the ones it
 * knows, with a typed error (issue #45): one row per entry point, each called with its options valid (which
 * must pass) and then with a misspelt one (which must throw SluiceTypeError naming it). The entry points are
 * found from the packages' exported types (option-entries.ts): a new one missing from this table fails the
 * last test.
 */
import 'reflect-metadata';
import {
  ManualClock,
  RateLimiter,
  SluiceTypeError,
  calendarWindow,
  concurrencyLimiter,
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  smoothBursty,
  smoothWarmingUp,
  throttle,
  tokenBucket,
} from '@sluice/core';
import { adminRouter } from '@sluice/core/admin';
import { checkEngine, memoryEngine } from '@sluice/core/engine';
import { rateLimitedProcessor } from '@sluice/core/bullmq';
import { countLimit, rateLimited, smoothRateLimit } from '@sluice/core/decorators';
import { fetchRateLimit } from '@sluice/core/fetch';
import { honoRateLimit } from '@sluice/core/hono';
import { byIp, fastifyRateLimit, type FastifyInstanceLike, rateLimit, rateLimitHook } from '@sluice/core/http';
import { koaRateLimit } from '@sluice/core/koa';
import { runCli } from '@sluice/cli';
import { EXIT } from '../../packages/cli/src/cli.js';
import { byMetadata, grpcRateLimit, grpcRetryOnLimit } from '@sluice/grpc';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { instrumentSluice } from '@sluice/otel';
import { postgresEngine, postgresStore } from '@sluice/postgres';
import { redisEngine, redisStore } from '@sluice/redis';
import type { OptionNames } from '@sluice/core/internal';
import { describe, expect, it } from 'vitest';
import { CALLS_TAKING_OPTIONS, NOT_TRIED, entriesTakingOptions } from './option-entries.js';
import { createEvaluator } from '@sluice/core/internal';

type Options = Record<string, unknown>;

// Imported by a name tsc does not follow: Nest's legacy decorators compile under packages/nestjs's tsconfig only.
const NESTJS = '@sluice/nestjs';
const { RateLimit, SluiceModule } = (await import(NESTJS)) as {
  readonly RateLimit: (options: unknown) => unknown;
  readonly SluiceModule: { forRoot(options: unknown): unknown; forRootAsync(options: unknown): unknown };
};

/** One entry point: its options, valid, and a call with them (the typo is added to the options given). */
interface Row {
  readonly options: () => Options;
  readonly call: (options: Options) => unknown;
  /** The misspelling tried: the one issue #45 measured where there is one. */
  readonly typo: string;
  /** False for a store given no Redis client: its valid options are not tried, only the typo. */
  readonly runs?: false;
}

const limiter = () => createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 1_000 }) });
const rule = () => fixedWindow({ limit: 10, windowMs: 1_000 });
// A store's unknown option is refused before its Redis client is looked at: this one is never used.
const unusedRedis = {} as never;
/** A pool as postgresEngine checks one (connect and query), never called: the engine connects at its first call. */
const unusedPool = { connect: () => undefined, query: () => undefined } as never;
const fastifyApp: FastifyInstanceLike = { addHook: () => undefined };

const ROWS: Readonly<Record<string, Row>> = {
  fixedWindow: {
    options: () => ({ limit: 1, windowMs: 1_000 }),
    call: (o) => fixedWindow(o as never),
    typo: 'windowMS',
  },
  slidingWindowLog: {
    options: () => ({ limit: 1, windowMs: 1_000 }),
    call: (o) => slidingWindowLog(o as never),
    typo: 'blockms',
  },
  slidingWindowCounter: {
    options: () => ({ limit: 1, windowMs: 1_000 }),
    call: (o) => slidingWindowCounter(o as never),
    typo: 'limits',
  },
  calendarWindow: {
    options: () => ({ limit: 1, period: 'day' }),
    call: (o) => calendarWindow(o as never),
    typo: 'timezone',
  },
  tokenBucket: {
    options: () => ({ capacity: 10, refillPerSecond: 1 }),
    call: (o) => tokenBucket(o as never),
    typo: 'maxdebt',
  },
  leakyBucket: {
    options: () => ({ capacity: 1, leakPerSecond: 1 }),
    call: (o) => leakyBucket(o as never),
    typo: 'mod',
  },
  gcra: { options: () => ({ permitsPerSecond: 1, burst: 1 }), call: (o) => gcra(o as never), typo: 'burts' },
  smoothBursty: { options: () => ({ permitsPerSecond: 1 }), call: (o) => smoothBursty(o as never), typo: 'maxBurst' },
  smoothWarmingUp: {
    options: () => ({ permitsPerSecond: 1, warmupMs: 1_000 }),
    call: (o) => smoothWarmingUp(o as never),
    typo: 'coldfactor',
  },
  'new ManualClock': { options: () => ({}), call: (o) => new ManualClock(0, o as never), typo: 'autoadvance' },
  createLimiter: { options: () => ({ rules: rule() }), call: (o) => createLimiter(o as never), typo: 'prefx' },
  'new MemoryStore': { options: () => ({}), call: (o) => memoryStore(o as never), typo: 'maxkeys' },
  memoryStore: { options: () => ({}), call: (o) => memoryStore(o as never), typo: 'maxkeys' },
  memoryEngine: { options: () => ({ clock: new ManualClock(0) }), call: (o) => memoryEngine(o as never), typo: 'clok' },
  checkEngine: {
    options: () => ({ seed: 1, steps: 5 }),
    call: (o) => checkEngine(memoryEngine(), o as never),
    typo: 'seeds',
  },
  concurrencyLimiter: { options: () => ({ max: 1 }), call: (o) => concurrencyLimiter(o as never), typo: 'maxQueu' },
  throttle: { options: () => ({ limiter: limiter() }), call: (o) => throttle(o as never), typo: 'maxqueue' },
  'RateLimiter.create': { options: () => ({}), call: (o) => RateLimiter.create(1, o as never), typo: 'warmupMS' },
  rateLimit: { options: () => ({ limiter: limiter() }), call: (o) => rateLimit(o as never), typo: 'trustproxy' },
  fastifyRateLimit: {
    options: () => ({ limiter: limiter() }),
    call: (o) => fastifyRateLimit(fastifyApp, o as never),
    typo: 'onlimited',
  },
  rateLimitHook: {
    options: () => ({ limiter: limiter() }),
    call: (o) => rateLimitHook(o as never),
    typo: 'skipFailed',
  },
  byIp: { options: () => ({}), call: (o) => byIp(o as never), typo: 'ipv6subnet' },
  createEvaluator: { options: () => ({ limiter: limiter() }), call: (o) => createEvaluator(o as never), typo: 'costs' },
  fetchRateLimit: {
    options: () => ({ limiter: limiter(), key: () => 'k' }),
    call: (o) => fetchRateLimit(o),
    typo: 'adress',
  },
  honoRateLimit: { options: () => ({ limiter: limiter() }), call: (o) => honoRateLimit(o), typo: 'getConninfo' },
  koaRateLimit: { options: () => ({ limiter: limiter() }), call: (o) => koaRateLimit(o), typo: 'header' },
  rateLimited: { options: () => ({ limiter: limiter() }), call: (o) => rateLimited(o as never), typo: 'permit' },
  countLimit: {
    options: () => ({ limit: 1, windowMs: 1_000 }),
    call: (o) => countLimit(o as never),
    typo: 'windowMS',
  },
  smoothRateLimit: {
    options: () => ({ permitsPerSecond: 1 }),
    call: (o) => smoothRateLimit(o as never),
    typo: 'maxBurst',
  },
  adminRouter: {
    options: () => ({
      limiters: [limiter()],
      authorize: (r: Request) => r.headers.get('authorization') === 'Bearer t',
    }),
    call: (o) => adminRouter(o as never),
    typo: 'basepath',
  },
  rateLimitedProcessor: {
    options: () => ({ limiter: limiter(), queue: { rateLimit: async () => {} } }),
    call: (o) => rateLimitedProcessor(async () => {}, o as never),
    typo: 'onlimited',
  },
  grpcRateLimit: { options: () => ({ limiter: limiter() }), call: (o) => grpcRateLimit(o), typo: 'method' },
  grpcRetryOnLimit: { options: () => ({}), call: (o) => grpcRetryOnLimit(o as never), typo: 'maxRetry' },
  byMetadata: { options: () => ({}), call: (o) => byMetadata('x-tenant', o as never), typo: 'maxKeylength' },
  leasedStore: {
    options: () => ({}),
    call: (o) => leasedStore({ redis: unusedRedis, ...o }),
    typo: 'timeoutMS',
    runs: false,
  },
  dividedStore: {
    options: () => ({}),
    call: (o) => dividedStore({ redis: unusedRedis, ...o }),
    typo: 'timeoutMS',
    runs: false,
  },
  redisStore: {
    options: () => ({}),
    call: (o) => redisStore({ redis: unusedRedis, ...o }),
    typo: 'timeoutMS',
    runs: false,
  },
  redisEngine: {
    options: () => ({}),
    call: (o) => redisEngine({ redis: unusedRedis, ...o }),
    typo: 'timeoutMS',
    runs: false,
  },
  postgresEngine: {
    options: () => ({}),
    call: (o) => postgresEngine({ pool: unusedPool, ...o }),
    typo: 'timeoutMS',
  },
  postgresStore: {
    options: () => ({}),
    call: (o) => postgresStore({ pool: unusedPool, ...o }),
    typo: 'timeoutMS',
    runs: false,
  },
  'SluiceModule.forRoot': { options: () => ({}), call: (o) => SluiceModule.forRoot(o), typo: 'graphQLPer' },
  'SluiceModule.forRootAsync': {
    options: () => ({ useFactory: () => ({}) }),
    call: (o) => SluiceModule.forRootAsync(o),
    typo: 'useFactroy',
  },
  RateLimit: { options: () => ({ algorithm: rule() }), call: (o) => RateLimit(o), typo: 'algorithms' },
  instrumentSluice: { options: () => ({}), call: (o) => instrumentSluice(o as never), typo: 'meterprovider' },
};

/** Options renamed before the first release: an entry point, the earlier name given to it, its name now. */
const RENAMED: ReadonlyArray<readonly [string, Options, string]> = [
  ['fixedWindow', { key: 'global' }, 'scope'],
  ['slidingWindowLog', { key: (k: string) => k }, 'scope'],
  ['calendarWindow', { key: 'global' }, 'scope'],
  ['tokenBucket', { initial: 0 }, 'initialPermits'],
  ['tokenBucket', { key: 'global' }, 'scope'],
  ['gcra', { rate: 1 }, 'permitsPerSecond'],
  ['countLimit', { periodMs: 1_000 }, 'windowMs'],
  ['byMetadata', { maxLength: 64 }, 'maxKeyLength'],
  ['throttle', { retries: 1 }, 'maxRetries'],
  ['rateLimit', { onLimited: () => {} }, 'limitedResponse'],
  ['fastifyRateLimit', { onLimited: () => {} }, 'limitedResponse'],
  ['rateLimitHook', { onLimited: () => {} }, 'limitedResponse'],
  ['fetchRateLimit', { onLimited: () => new Response() }, 'limitedResponse'],
  ['honoRateLimit', { onLimited: () => new Response() }, 'limitedResponse'],
  ['koaRateLimit', { onLimited: () => {} }, 'limitedResponse'],
  ['RateLimit', { onLimited: () => undefined }, 'limitedError'],
  ['SluiceModule.forRoot', { onLimited: () => undefined }, 'limitedError'],
];

async function thrown(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('an unknown option is refused by name at every entry point', () => {
  it.each(Object.entries(ROWS))('%s', async (_name, { options, call, typo, runs }) => {
    // Valid options pass (async entry points too): the typo is what is refused below.
    if (runs !== false) await call(options());
    const error = await thrown(() => call({ ...options(), [typo]: 1 }));
    expect(error).toBeInstanceOf(SluiceTypeError);
    expect((error as SluiceTypeError).argument).toBe(typo);
    expect((error as Error).message).toContain(`no option ${JSON.stringify(typo)}`);
    const known = Object.keys(options())[0];
    expect((error as Error).message).toMatch(/the options are /);
    if (known !== undefined) expect((error as Error).message).toContain(known);
  });

  it('sluice (the CLI): an unknown flag is a usage error naming it and the known flags', async () => {
    const err: string[] = [];
    const code = await runCli(['top', '--prefix', 'p', '--minute', '5'], {
      out: () => {},
      err: (l) => err.push(l),
      env: {},
    });
    expect(code).toBe(EXIT.usage);
    expect(err.join('\n')).toContain('no option "minute"');
    expect(err.join('\n')).toMatch(/the options are .*minutes/);
  });

  it('throttle.run, throttle.fetch init.throttle and concurrencyLimiter.acquire refuse an unknown option', async () => {
    const calls = throttle({ limiter: limiter() });
    await expect(calls.run(() => 1, { priorty: 1 } as never)).rejects.toThrow(/no option "priorty"/);
    await expect(calls.fetch('http://127.0.0.1:9/', { throttle: { onresponse: () => {} } } as never)).rejects.toThrow(
      /no option "onresponse"/,
    );
    const slots = concurrencyLimiter({ max: 1 });
    await expect(slots.acquire('k', { timeoutMS: 5 } as never)).rejects.toThrow(/no option "timeoutMS"/);
    // The refused call took no slot: the only one is free.
    const slot = await slots.tryAcquire('k');
    expect(slot).toBeDefined();
    await slot?.release();
    await calls.close();
    await slots.close();
  });

  it("a limiter's calls refuse an unknown option, and a refused call consumes nothing", async () => {
    const l = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60_000 }) });
    const refused: Array<[string, () => Promise<unknown>, string]> = [
      ['tryAcquire', () => l.tryAcquire('k', { permit: 2 } as never), 'permit'],
      ['acquire', () => l.acquire('k', { timeoutMs: 5 } as never), 'timeoutMs'],
      ['peek', () => l.peek('k', { plans: 'x' } as never), 'plans'],
      ['refund', () => l.refund('k', 1, { grantedAgoMs: 5 } as never), 'grantedAgoMs'],
      ['penalize', () => l.penalize('k', 1, { plann: 'x' } as never), 'plann'],
      [
        'reconfigure',
        () => l.reconfigure(fixedWindow({ limit: 3, windowMs: 60_000 }), { cary: 'none' } as never),
        'cary',
      ],
      ['overrides', () => l.overrides({ limit: 5 } as never), 'limit'],
      ['topLimited', () => l.topLimited(5, { minute: 5 } as never), 'minute'],
    ];
    expect(refused.map(([method]) => `limiter.${method}`)).toEqual(
      CALLS_TAKING_OPTIONS.filter((name) => name.startsWith('limiter.')),
    );
    for (const [method, call, typo] of refused) {
      const error = await thrown(call);
      expect(error, method).toBeInstanceOf(SluiceTypeError);
      expect((error as SluiceTypeError).argument, method).toBe(typo);
      expect((error as Error).message, method).toMatch(/the options are /);
    }
    // Nothing was consumed, penalized or changed: both permits of the first configuration are there.
    expect((await l.peek('k')).remaining).toBe(2);
    expect(l.rules.map((rule) => rule.limit)).toEqual([2]);
    await l.close();
  });

  it('the old name of a wait budget (timeoutMs, now maxWaitMs) is refused by name wherever a call waits', async () => {
    const l = limiter();
    const slots = concurrencyLimiter({ max: 1 });
    const calls = throttle({ limiter: limiter() });
    const old: Array<[string, () => unknown]> = [
      ['tryAcquire', () => l.tryAcquire('k', { timeoutMs: 5 } as never)],
      // acquire waits until it is granted: it never took a wait budget, under either name.
      ['acquire', () => l.acquire('k', { timeoutMs: 5 } as never)],
      ['concurrencyLimiter.acquire', () => slots.acquire('k', { timeoutMs: 5 } as never)],
      ['throttle.run', () => calls.run(() => 1, { timeoutMs: 5 } as never)],
      ['rateLimit', () => rateLimit({ limiter: l, timeoutMs: 5 } as never)],
      ['rateLimit concurrency', () => rateLimit({ concurrency: { limiter: slots, timeoutMs: 5 } } as never)],
      ['rateLimited', () => rateLimited({ limiter: l, timeoutMs: 5 } as never)],
      ['grpcRateLimit', () => grpcRateLimit({ limiter: l, timeoutMs: 5 } as never)],
      ['RateLimit (Nest)', () => RateLimit({ algorithm: rule(), timeoutMs: 5 })],
    ];
    for (const [entry, call] of old) {
      const error = await thrown(call);
      expect(error, entry).toBeInstanceOf(SluiceTypeError);
      expect((error as SluiceTypeError).argument, entry).toBe('timeoutMs');
      expect((error as Error).message, entry).toMatch(
        entry === 'acquire' ? /no option "timeoutMs"/ : /no option "timeoutMs".*maxWaitMs/,
      );
    }
    // Nothing was taken by a refused call: the limiter's 10 permits and the one slot are all there.
    expect((await l.peek('k')).remaining).toBe(10);
    expect(slots.waiting('k')).toBe(0);
    const slot = await slots.tryAcquire('k');
    expect(slot).toBeDefined();
    await slot?.release();
    await Promise.all([l.close(), slots.close(), calls.close()]);
  });

  it.each([
    'rateLimit',
    'fastifyRateLimit',
    'rateLimitHook',
    'createEvaluator',
    'fetchRateLimit',
    'honoRateLimit',
    'koaRateLimit',
    'rateLimitedProcessor',
    'grpcRateLimit',
    'SluiceModule.forRoot',
    'RateLimit',
  ])("%s: the old names of a request's permits (cost, costAfterResponse) are refused by name", async (entry) => {
    const { options, call } = ROWS[entry] as Row;
    const takesAfterResponse = !['rateLimitedProcessor', 'grpcRateLimit'].includes(entry);
    const old: Options[] = [{ cost: 2 }, ...(takesAfterResponse ? [{ costAfterResponse: () => 1 }] : [])];
    for (const given of old) {
      const [name] = Object.keys(given) as [string];
      const error = await thrown(() => call({ ...options(), ...given }));
      expect(error, name).toBeInstanceOf(SluiceTypeError);
      expect((error as SluiceTypeError).argument, name).toBe(name);
      expect((error as Error).message, name).toMatch(new RegExp(`no option "${name}".*permits`));
    }
    // The new names are taken.
    await call({ ...options(), permits: 2, ...(takesAfterResponse ? { permitsAfterResponse: () => 1 } : {}) });
  });

  it.each(RENAMED)('%s: the earlier name of %o is refused by name, saying it is %s now', async (entry, given, now) => {
    const { options, call } = ROWS[entry] as Row;
    const [old] = Object.keys(given) as [string];
    const error = await thrown(() => call({ ...options(), ...given }));
    expect(error, old).toBeInstanceOf(SluiceTypeError);
    expect((error as SluiceTypeError).argument, old).toBe(old);
    expect((error as Error).message).toMatch(
      new RegExp(`no option "${old}".*it is called ${now} now.*the options are .*${now}`),
    );
    // The new name is taken where it replaces the old.
    const value = (given as Options)[old];
    await call({ ...options(), [now]: value });
  });

  it('onLimited stays where it only tells of a refusal (gRPC, BullMQ); createEvaluator, which answers none, names no rename', async () => {
    await ROWS.grpcRateLimit?.call({ ...ROWS.grpcRateLimit.options(), onLimited: () => {} });
    await ROWS.rateLimitedProcessor?.call({ ...ROWS.rateLimitedProcessor.options(), onLimited: () => {} });
    const error = await thrown(() => createEvaluator({ limiter: limiter(), onLimited: () => {} } as never));
    expect((error as SluiceTypeError).argument).toBe('onLimited');
    expect((error as Error).message).not.toMatch(/it is called/);
  });

  it('the table holds every exported function, constructor and static method that takes options', () => {
    const found = [...entriesTakingOptions().keys()];
    const missing = found.filter((name) => !(name in ROWS) && !(name in NOT_TRIED));
    expect(missing, 'entry points taking options with no row in ROWS (nor a reason in NOT_TRIED)').toEqual([]);
    const stale = [...Object.keys(ROWS), ...Object.keys(NOT_TRIED)].filter((name) => !found.includes(name));
    expect(stale, 'rows for entry points no package exports (or no longer with options)').toEqual([]);
  });
});

describe('OptionNames', () => {
  it('is refused by the compiler when it misses a name of its type or has one the type lacks', () => {
    interface Example {
      limit: number;
      windowMs?: number;
    }
    const exact: OptionNames<Example> = { limit: true, windowMs: true };
    // @ts-expect-error windowMs is missing
    const short: OptionNames<Example> = { limit: true };
    // @ts-expect-error windowMS is not an option of Example
    const extra: OptionNames<Example> = { limit: true, windowMs: true, windowMS: true };
    expect([exact, short, extra].map((names) => Object.keys(names).length)).toEqual([2, 1, 3]);
  });
});
