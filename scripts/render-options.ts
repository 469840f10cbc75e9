// Renders docs/options.md: every option of every public entry point that takes options, its default and its
// doc line, from the one home each option has: its options type's doc comments (the first sentence, and the
// `@default` tag), read with the TypeScript compiler (option-types.ts). An entry point that parses its options
// with a schema declares the schema against that type (SchemaOf), and test/options/schema-defaults.test.ts
// checks that its defaults are the ones the type documents. `npx tsx scripts/render-options.ts` writes it;
// test/options-doc.test.ts fails when it is out of date or an entry point has no section.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RULE_FACTORIES } from '../packages/core/src/algorithms/rule-spec.js';
import { type OptionRow, publicTypes } from './option-types.js';

const types = () => publicTypes();
/** An entry point's options, from the type of its options parameter. */
const ofEntry = (name: string) => types().rowsOfEntry(name);
/** A type's options (or a constant object's properties), declared in `file`. */
const ofType = (file: string, name: string) => types().rowsOfDeclaration(file, name);

const cell = (text: string) => text.replaceAll('|', '\\|');

/** A table of options; every option must have a doc line (written where it is declared). */
function table(rows: readonly OptionRow[], column = 'option'): string {
  const lines = rows.map((row) => {
    if (row.doc === '')
      throw new Error(`option ${row.declaredIn}.${row.name} has no doc comment; write one where it is declared`);
    return `| \`${row.name}\` | ${cell(row.default)} | ${cell(row.doc)} |`;
  });
  return [`| ${column} | default | what it does |`, '| --- | --- | --- |', ...lines].join('\n');
}

/**
 * An entry point's own options, and a line naming the shared ones it takes (those the `shared` interfaces
 * declare), documented once in the section `where`.
 */
function beside(rows: readonly OptionRow[], where: string, shared: readonly string[]): string {
  const own = rows.filter((row) => !shared.includes(row.declaredIn));
  const names = rows.filter((row) => shared.includes(row.declaredIn)).map((row) => `\`${row.name}\``);
  const takes = names.length === 0 ? '' : `\n\nBeside these, it takes the ${where}: ${names.join(', ')}.`;
  return `${own.length === 0 ? 'None of its own.' : table(own)}${takes}`;
}

const HTTP = ['RateLimitOptions', 'AfterResponseOptions'];
const HTTP_SHARED = 'options every HTTP adapter shares (createEvaluator, above)';
const RULE = ['RuleOptions'];
const RULE_SHARED = 'options every rule takes (above)';
const PRESET = ['PresetOptions', 'MethodLimitOptions'];

/** The rule factories, from the registry of algorithms: one section each, beside the options every rule takes. */
function rules(): string {
  const notes: Readonly<Record<string, string>> = {
    smoothBursty: ": Guava's SmoothBursty",
    smoothWarmingUp: ": Guava's SmoothWarmingUp",
  };
  return Object.keys(RULE_FACTORIES)
    .map((name) => `## ${name} (@sluice/core)${notes[name] ?? ''}\n\n${beside(ofEntry(name), RULE_SHARED, RULE)}\n`)
    .join('\n');
}

/** The limiter's calls, each with its options type. */
function limiterCalls(): string {
  const engine = 'packages/core/src/engine';
  const tryAcquire = ofType(`${engine}/limiter-types.ts`, 'TryAcquireOptions');
  const calls: ReadonlyArray<readonly [string, OptionRow[]]> = [
    ['tryAcquire', tryAcquire],
    ['acquire', ofType(`${engine}/limiter-types.ts`, 'AcquireOptions')],
    ['peek', ofType(`${engine}/limiter-types.ts`, 'PeekOptions')],
    ['refund', ofType(`${engine}/limiter-types.ts`, 'RefundOptions')],
    ['penalize', ofType(`${engine}/limiter-types.ts`, 'PenalizeOptions')],
    ['reconfigure', ofType(`${engine}/limiter-types.ts`, 'ReconfigureOptions')],
    ['overrides', ofType(`${engine}/limiter-types.ts`, 'OverridesOptions')],
    ['topLimited', ofType(`${engine}/limited-keys.ts`, 'TopLimitedOptions')],
  ];
  return calls.map(([name, rows]) => `## limiter.${name} (@sluice/core)\n\n${table(rows)}\n`).join('\n');
}

/** The whole of docs/options.md. */
export function renderOptions(): string {
  const redis = 'packages/redis/src/options.ts';
  const engine = 'packages/core/src/modes/engine-options.ts';
  const redisShared = ['RedisBackedOptions', 'EngineBackedOptions', 'FailModeOptions'];
  const redisBeside = (rows: readonly OptionRow[]) =>
    table(rows.filter((row) => !redisShared.includes(row.declaredIn)));
  const core = 'packages/core/src';
  return `# Options

Every option of sluice's entry points, its default and what it does (\`scripts/render-options.ts\`; do not edit
by hand). Each option is documented once, on its entry point's options type: the first sentence of its doc
comment, and its \`@default\` tag. \`required\` marks an option that must be given, \`-\` one that is unset
unless given. Each is checked: a bad value, or an option the entry point does not take (a misspelt
\`timeoutMS\`), is a typed error naming it.
The defaults are values, not exported constants: they are here and on each option's \`@default\` tag. Each
option's full documentation is on its options type in the [API reference](api/README.md). What each word
means wherever it appears, its unit and what it is not: [docs/vocabulary.md](vocabulary.md).

## createLimiter (@sluice/core)

\`rules\` or \`plans\` is required (not both).

${table(ofType(`${core}/engine/limiter-options.ts`, 'LimiterOptions'))}

${limiterCalls()}
## limiter.allow, limiter.deny (@sluice/core)

${table(ofType(`${core}/engine/access-list.ts`, 'ListEntryOptions'))}

## Every rule: the options every algorithm takes

Each rule factory takes these beside its own (listed below under each factory).

${table(ofType(`${core}/algorithms/algorithm.ts`, 'RuleOptions'))}

${rules()}
## memoryStore, new MemoryStore (@sluice/core)

${table(ofType(`${core}/engine/memory-store.ts`, 'MemoryStoreOptions'))}

## memoryEngine (@sluice/core/engine)

${table(ofEntry('memoryEngine'))}

## checkEngine (@sluice/core/engine): the engine contract's conformance suite

${table(ofEntry('checkEngine'))}

## new ManualClock (@sluice/core)

\`new ManualClock(startMs, options)\`.

${table(ofEntry('new ManualClock'))}

## concurrencyLimiter (@sluice/core)

${table(ofType(`${core}/concurrency/concurrency-options.ts`, 'ConcurrencyLimiterOptions'))}

## concurrencyLimiter.acquire, concurrencyLimiter.run (@sluice/core)

${table(ofType(`${core}/concurrency/concurrency-limiter.ts`, 'ConcurrencyAcquireOptions'))}

## throttle (@sluice/core)

${table(ofType(`${core}/throttle/throttle-options.ts`, 'ThrottleOptions'))}

## throttle.run (@sluice/core)

${table(ofType(`${core}/throttle/throttle.ts`, 'ThrottleRunOptions'))}

## throttle.fetch (@sluice/core): init.throttle

The platform's \`RequestInit\` stays the platform's; sluice's options go in \`init.throttle\`.

${beside(ofType(`${core}/throttle/throttle-fetch.ts`, 'ThrottleFetchOptions'), 'options of throttle.run (above)', ['ThrottleRunOptions'])}

## RateLimiter.create (@sluice/core): the Guava facade

\`RateLimiter.create(permitsPerSecond, options)\`.

${table(ofEntry('RateLimiter.create'))}

## createEvaluator (@sluice/core/http): the options every HTTP adapter shares

One vocabulary: each of these means the same, with the same default, in every HTTP adapter (Express and
Node's \`rateLimit\`, Fastify, Fetch, Hono, Koa) and in the NestJS guard; the gRPC interceptor takes most of
them. Each adapter's own options are listed below under it.

${table(ofEntry('createEvaluator'))}

### concurrency: a concurrencyLimiter, or these

${table(ofType(`${core}/adapters/http/options.ts`, 'ConcurrencyRouteOptions'))}

## rateLimit (@sluice/core/http): Express and Node, beside the shared options

${beside(ofEntry('rateLimit'), HTTP_SHARED, HTTP)}

## fastifyRateLimit, rateLimitHook (@sluice/core/http): Fastify, beside the shared options

${beside(ofEntry('fastifyRateLimit'), HTTP_SHARED, HTTP)}

## fetchRateLimit (@sluice/core/fetch), beside the shared options

${beside(ofEntry('fetchRateLimit'), HTTP_SHARED, HTTP)}

## honoRateLimit (@sluice/core/hono), beside the shared options

${beside(ofEntry('honoRateLimit'), HTTP_SHARED, HTTP)}

## koaRateLimit (@sluice/core/koa), beside the shared options

${beside(ofEntry('koaRateLimit'), HTTP_SHARED, HTTP)}

## byIp (@sluice/core/http)

${table(ofEntry('byIp'))}

## rateLimited (@sluice/core/decorators)

${table(ofEntry('rateLimited'))}

## Every preset: the options countLimit and smoothRateLimit share

A preset makes its own limiter; it takes rateLimited's options but \`limiter\`, and where that limiter keeps
its state.

${table(ofType(`${core}/adapters/decorators/presets.ts`, 'PresetOptions'))}

## countLimit (@sluice/core/decorators), beside the preset options

${beside(ofEntry('countLimit'), 'options every preset takes (above)', PRESET)}

## smoothRateLimit (@sluice/core/decorators), beside the preset options

${beside(ofEntry('smoothRateLimit'), 'options every preset takes (above)', PRESET)}

## adminRouter (@sluice/core/admin)

${table(ofType(`${core}/admin/admin-options.ts`, 'AdminRouterOptions'))}

## rateLimitedProcessor (@sluice/core/bullmq)

\`rateLimitedProcessor(processor, options)\`.

${table(ofEntry('rateLimitedProcessor'))}

## grpcRateLimit (@sluice/grpc), beside the shared options

${beside(ofEntry('grpcRateLimit'), HTTP_SHARED, HTTP)}

## grpcRetryOnLimit (@sluice/grpc)

${table(ofEntry('grpcRetryOnLimit'))}

## byMetadata (@sluice/grpc)

\`byMetadata(name, options)\`.

${table(ofType('packages/grpc/src/call.ts', 'ByMetadataOptions'))}

## RateLimit (@sluice/nestjs): a route's limit, beside the shared options

The \`@RateLimit(options)\` decorator on a controller or a handler.

${beside(ofEntry('RateLimit'), HTTP_SHARED, HTTP)}

## SluiceModule.forRoot (@sluice/nestjs), beside the route options

The module's options: the defaults of every route, and a limit for every route when \`limiter\` or
\`algorithm\` is given.

${beside(ofEntry('SluiceModule.forRoot'), 'options of RateLimit (above), which are route defaults here', [...HTTP, 'RouteLimitOptions'])}

## SluiceModule.forRootAsync (@sluice/nestjs)

${table(ofEntry('SluiceModule.forRootAsync'))}

## instrumentSluice (@sluice/otel)

${table(ofEntry('instrumentSluice'))}

## sluice (@sluice/cli): the command line

${'```'}text
${types().constantText('packages/cli/src/cli.ts', 'USAGE')}
${'```'}

${table(
  // A flag left out is unset: none is required by parseArgs (a command says which it needs).
  ofType('packages/cli/src/cli.ts', 'FLAGS').map((row) => ({
    ...row,
    name: `--${row.name}`,
    default: row.default === 'required' ? '-' : row.default,
  })),
  'flag',
)}

## Every Redis-backed store: redisStore, leasedStore, dividedStore

One vocabulary: each of these means the same, with the same default, on every Redis-backed store. \`failMode\`
is taken by the stores that decide on Redis (redisStore, leasedStore); a divided store decides within its share,
keeps its last share while Redis is away and holds its part of the reserve locally (charged to the reserve on
Redis's return), denying what neither covers.

${table([...ofType(redis, 'RedisBackedOptions'), ...ofType(engine, 'FailModeOptions')])}

## redisStore (@sluice/redis), beside the shared options

${redisBeside(ofType('packages/redis/src/redis-store.ts', 'RedisStoreOptions'))}

## redisEngine (@sluice/redis)

The engine contract on Redis (\`@sluice/core/engine\`): no fail mode, no clock of its own (each call names its
time, or Redis TIME), no fleet.

${table(ofType('packages/redis/src/engine/engine-options.ts', 'RedisEngineOptions'))}

## postgresEngine (@sluice/postgres)

The engine contract on PostgreSQL (\`@sluice/core/engine\`): each call one transaction on your node-postgres
pool, its time PostgreSQL's clock_timestamp() unless the call names one; no fail mode.

${table(ofType('packages/postgres/src/engine-options.ts', 'PostgresEngineOptions'))}

## postgresStore (@sluice/postgres)

Exact mode on PostgreSQL: postgresEngine under core's exact-mode assembly (deny cache, live limits, health and
fail mode), as redisStore is on Redis; no fleet count yet, so failMode 'local' holds 1 / assumedNodes of a limit.

${beside(ofType('packages/postgres/src/store-options.ts', 'PostgresStoreOptions'), 'shared options above (those of every store over an engine)', ['EngineBackedOptions', 'FailModeOptions'])}

## leasedStore (@sluice/hybrid), beside the shared options

${redisBeside(ofType('packages/hybrid/src/leased-options.ts', 'LeasedStoreOptions'))}

## dividedStore (@sluice/hybrid), beside the shared options

${redisBeside(ofType('packages/hybrid/src/divided-options.ts', 'DividedStoreOptions'))}
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(fileURLToPath(new URL('../docs/options.md', import.meta.url)), renderOptions());
  console.log('docs/options.md written');
}
