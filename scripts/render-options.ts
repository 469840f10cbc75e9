// Renders docs/options.md from the option schemas, so the list of options, their defaults and their one-line
// docs have one home (the schemas the entry points parse with): `npx tsx scripts/render-options.ts` writes
// it; test/options-doc.test.ts fails when it is out of date.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CONCURRENCY_LIMITER_OPTIONS } from '../packages/core/src/concurrency/concurrency-limiter.js';
import { LIMITER_OPTIONS } from '../packages/core/src/engine/limiter-options.js';
import { MEMORY_STORE_OPTIONS } from '../packages/core/src/engine/memory-store.js';
import type { OptionSchema, OptionSpec } from '../packages/core/src/foundation/options.js';
import { THROTTLE_OPTIONS } from '../packages/core/src/throttle/throttle-options.js';
import { ADMIN_ROUTER_OPTIONS } from '../packages/core/src/admin/admin-options.js';
import { DIVIDED_STORE_OPTIONS } from '../packages/hybrid/src/divided-options.js';
import { LEASED_STORE_OPTIONS } from '../packages/hybrid/src/leased-options.js';
import { FAIL_MODE_OPTIONS, REDIS_BACKED_OPTIONS, REDIS_STORE_OPTIONS } from '../packages/redis/src/options.js';

function defaultText(spec: OptionSpec<unknown>): string {
  if (spec.required === true) return 'required';
  if (!('default' in spec)) return '-';
  const value = spec.default;
  const shown = typeof value === 'string' ? `'${value}'` : String(value);
  return spec.defaultName === undefined ? `\`${shown}\`` : `\`${spec.defaultName}\` (${shown})`;
}

function table(schema: OptionSchema, leaveOut: readonly string[] = []): string {
  const rows = Object.entries(schema)
    .filter(([name]) => !leaveOut.includes(name))
    .map(([name, spec]) => `| \`${name}\` | ${defaultText(spec)} | ${spec.doc} |`);
  return ['| option | default | what it does |', '| --- | --- | --- |', ...rows].join('\n');
}

/** The whole of docs/options.md. */
export function renderOptions(): string {
  const shared = [...Object.keys(REDIS_BACKED_OPTIONS), ...Object.keys(FAIL_MODE_OPTIONS)];
  return `# Options

Every option of sluice's entry points, its default and what it does, rendered from the schemas the entry points
parse their options with (\`scripts/render-options.ts\`; do not edit by hand). Each is checked at construction:
a bad value, or an option the entry point does not take (a misspelt \`timeoutMS\`), is a typed error naming it.
The defaults are exported constants (\`DEFAULT_TIMEOUT_MS\`, ...) from the package the entry point is in. Each
option's full documentation is on its options type in the [API reference](api/README.md).

## createLimiter (@sluice/core)

\`rules\` or \`plans\` is required (not both).

${table(LIMITER_OPTIONS)}

## memoryStore (@sluice/core)

${table(MEMORY_STORE_OPTIONS)}

## concurrencyLimiter (@sluice/core)

${table(CONCURRENCY_LIMITER_OPTIONS)}

## throttle (@sluice/core)

${table(THROTTLE_OPTIONS)}

## adminRouter (@sluice/core/admin)

${table(ADMIN_ROUTER_OPTIONS)}

## Every Redis-backed store: redisStore, leasedStore, dividedStore

One vocabulary: each of these means the same, with the same default, on every Redis-backed store. \`failMode\`
is taken by the stores that decide on Redis (redisStore, leasedStore); a divided store decides within its share,
keeps its last share while Redis is away and holds its part of the reserve locally (charged to the reserve on
Redis's return), denying what neither covers.

${table({ ...REDIS_BACKED_OPTIONS, ...FAIL_MODE_OPTIONS })}

## redisStore (@sluice/redis), beside the shared options

${table(REDIS_STORE_OPTIONS, shared)}

## leasedStore (@sluice/hybrid), beside the shared options

${table(LEASED_STORE_OPTIONS, shared)}

## dividedStore (@sluice/hybrid), beside the shared options

${table(DIVIDED_STORE_OPTIONS, shared)}
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(fileURLToPath(new URL('../docs/options.md', import.meta.url)), renderOptions());
  console.log('docs/options.md written');
}
