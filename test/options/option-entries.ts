// The public entry points that take options: every exported function, constructor and static method whose
// parameter is an options object (found from the packages' types, scripts/option-types.ts), and the calls
// of what they return that take options too. The unknown-options test fails when one is missing from its
// table; test/options-doc.test.ts when one has no section in docs/options.md.
import { publicTypes } from '../../scripts/option-types.js';

/**
 * Every exported callable that takes an options object, by export name (`SluiceModule.forRoot` for a static
 * method, `new MemoryStore` for a constructor) to the package entry exporting it; a name exported by several
 * entries with one declaration (byIp) is listed once.
 */
export function entriesTakingOptions(): Map<string, string> {
  return new Map([...publicTypes().entries()].map(([name, { entry }]) => [name, entry]));
}

/**
 * Entry points that take an object no user writes as options, each with why: the options type is someone
 * else's, or the way in is another entry point. Neither tried with a typo nor documented in docs/options.md.
 */
export const NOT_TRIED: Readonly<Record<string, string>> = {
  'new SluiceError': "ErrorOptions, passed to Error as the platform's own errors take them",
  'new RateLimiter': 'private: RateLimiter.create is the way in (tried)',
  'new SluiceGuard': "Nest injects the module's options, checked by SluiceModule.forRoot/forRootAsync",
  'RateLimitException.getDescriptionFrom': "Nest's HttpException statics, inherited",
  'RateLimitException.getHttpExceptionOptionsFrom': "Nest's HttpException statics, inherited",
  'RateLimitException.extractDescriptionAndOptionsFrom': "Nest's HttpException statics, inherited",
  listEntries: 'internal: an access list read as the CLI needs it, no options of a user',
  'new RedisStore': 'redisStore() is the documented way in; the constructor parses the same schema (tried)',
  'new PostgresStore': 'postgresStore() is the documented way in; the constructor parses the same schema (tried)',
  'new EngineHealth': 'internals a store constructs',
  'new DeadlineError': 'internals a store constructs',
  'new Fallback': 'internals a store constructs',
  'new RedisPresence': 'internals a store constructs',
  engineOnConnection: "internals a store constructs (its extras are the store's own parsed options)",
};

/**
 * The calls of what an entry point returns that take options (a limiter's, a throttle's, a concurrency
 * limiter's) and the CLI: not exported callables, so not found from the types; each refuses an unknown
 * option (the unknown-options test tries every one).
 */
export const CALLS_TAKING_OPTIONS: readonly string[] = [
  'limiter.tryAcquire',
  'limiter.acquire',
  'limiter.peek',
  'limiter.refund',
  'limiter.penalize',
  'limiter.reconfigure',
  'limiter.overrides',
  'limiter.topLimited',
  'throttle.run',
  'throttle.fetch',
  'concurrencyLimiter.acquire',
  'sluice',
];
