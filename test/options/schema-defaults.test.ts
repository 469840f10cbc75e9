/**
 * An entry point that parses its options with a schema keeps each option's check and default there, and its
 * documentation on the options type (docs/options.md is rendered from the type's `@default` tags). The
 * compiler links their option names (SchemaOf); this links their defaults: where a tag names a literal or a
 * constant, the schema's default must be that value, under that constant's name.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_ROUTER_OPTIONS } from '../../packages/core/src/admin/admin-options.js';
import { CONCURRENCY_LIMITER_OPTIONS } from '../../packages/core/src/concurrency/concurrency-options.js';
import { LIST_ENTRY_OPTIONS } from '../../packages/core/src/engine/access-list.js';
import { LIMITER_OPTIONS } from '../../packages/core/src/engine/limiter-options.js';
import { MEMORY_STORE_OPTIONS } from '../../packages/core/src/engine/memory-store.js';
import { CHECK_ENGINE_OPTIONS } from '../../packages/core/src/contract/conformance/check-engine.js';
import { MEMORY_ENGINE_OPTIONS } from '../../packages/core/src/contract/memory-engine.js';
import {
  type OptionSchema,
  type OptionSpec,
  option,
  optional,
  positiveInteger,
  required,
} from '../../packages/core/src/internal/index.js';
import { THROTTLE_OPTIONS } from '../../packages/core/src/throttle/throttle-options.js';
import { BY_METADATA_OPTIONS } from '../../packages/grpc/src/call.js';
import { DIVIDED_STORE_OPTIONS } from '../../packages/hybrid/src/divided-options.js';
import { HYBRID_BACKED_OPTIONS } from '../../packages/hybrid/src/engine-choice.js';
import { LEASED_STORE_OPTIONS } from '../../packages/hybrid/src/leased-options.js';
import { ENGINE_BACKED_OPTIONS, FAIL_MODE_OPTIONS } from '../../packages/core/src/modes/engine-options.js';
import { POSTGRES_ENGINE_OPTIONS } from '../../packages/postgres/src/engine-options.js';
import { POSTGRES_STORE_OPTIONS } from '../../packages/postgres/src/store-options.js';
import { REDIS_ENGINE_OPTIONS } from '../../packages/redis/src/engine/engine-options.js';
import { REDIS_BACKED_OPTIONS, REDIS_STORE_OPTIONS } from '../../packages/redis/src/options.js';
import { publicTypes } from '../../scripts/option-types.js';

const core = 'packages/core/src';

/** Each schema, and the options type (file, name) it is declared against. */
const SCHEMAS: ReadonlyArray<readonly [OptionSchema, string, string]> = [
  [LIMITER_OPTIONS, `${core}/engine/limiter-options.ts`, 'LimiterOptions'],
  [LIST_ENTRY_OPTIONS, `${core}/engine/access-list.ts`, 'ListEntryOptions'],
  [MEMORY_STORE_OPTIONS, `${core}/engine/memory-store.ts`, 'MemoryStoreOptions'],
  [MEMORY_ENGINE_OPTIONS, `${core}/contract/memory-engine.ts`, 'MemoryEngineOptions'],
  [CHECK_ENGINE_OPTIONS, `${core}/contract/conformance/check-engine.ts`, 'CheckEngineOptions'],
  [CONCURRENCY_LIMITER_OPTIONS, `${core}/concurrency/concurrency-options.ts`, 'ConcurrencyLimiterOptions'],
  [THROTTLE_OPTIONS, `${core}/throttle/throttle-options.ts`, 'ThrottleOptions'],
  [ADMIN_ROUTER_OPTIONS, `${core}/admin/admin-options.ts`, 'AdminRouterOptions'],
  [BY_METADATA_OPTIONS, 'packages/grpc/src/call.ts', 'ByMetadataOptions'],
  [ENGINE_BACKED_OPTIONS, `${core}/modes/engine-options.ts`, 'EngineBackedOptions'],
  [REDIS_BACKED_OPTIONS, 'packages/redis/src/options.ts', 'RedisBackedOptions'],
  [HYBRID_BACKED_OPTIONS, 'packages/hybrid/src/engine-choice.ts', 'HybridBackedOptions'],
  [FAIL_MODE_OPTIONS, `${core}/modes/engine-options.ts`, 'FailModeOptions'],
  [REDIS_STORE_OPTIONS, 'packages/redis/src/redis-store.ts', 'RedisStoreOptions'],
  [REDIS_ENGINE_OPTIONS, 'packages/redis/src/engine/engine-options.ts', 'RedisEngineOptions'],
  [POSTGRES_ENGINE_OPTIONS, 'packages/postgres/src/engine-options.ts', 'PostgresEngineOptions'],
  [POSTGRES_STORE_OPTIONS, 'packages/postgres/src/store-options.ts', 'PostgresStoreOptions'],
  [LEASED_STORE_OPTIONS, 'packages/hybrid/src/leased-options.ts', 'LeasedStoreOptions'],
  [DIVIDED_STORE_OPTIONS, 'packages/hybrid/src/divided-options.ts', 'DividedStoreOptions'],
];

/** A value as a `@default` tag spells it: strings quoted, objects as `{ a: 1, b: false }`. */
function spelt(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (Array.isArray(value)) return `[${value.map(spelt).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    // An empty field stands for a default worked out later (limitedKeys.keySecret: the prefix): no tag names it.
    const fields = Object.entries(value)
      .filter(([, field]) => field !== '' && field !== undefined)
      .map(([name, field]) => `${name}: ${spelt(field)}`);
    return fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`;
  }
  return String(value);
}

/** A tag's value: each `NAME (value)` read as its value, `10_000` as 10000. */
const tagValue = (tag: string) =>
  tag.replace(/\b[A-Z][A-Z0-9_]*[A-Z0-9] \(([^()]*)\)/g, '$1').replace(/(\d)_(?=\d)/g, '$1');

/** A tag that is a value and nothing more: a literal, or a constant with its value. */
const PLAIN = /^('[^']*'|-?\d[\d.]*|true|false|Infinity|\{.*\})$/;

/**
 * Where an option's schema and its type's `@default` tag (`required`, the tag's text, or `-`) disagree:
 * undefined when they agree.
 */
function disagreement(spec: OptionSpec<unknown>, tag: string): string | undefined {
  if (spec.required === true) return tag === 'required' ? undefined : `the schema requires it; the type says ${tag}`;
  if (tag === 'required') return 'the type requires it; the schema does not';
  if (!('default' in spec)) {
    return PLAIN.test(tagValue(tag)) ? `the type says ${tag}; the schema gives no default` : undefined;
  }
  const value = spelt(spec.default);
  if (spec.defaultName !== undefined && !tag.startsWith(`${spec.defaultName} (`))
    return `the schema's default is ${spec.defaultName} (${value}); the type says ${tag}`;
  const read = tagValue(tag);
  const rest = read.slice(value.length);
  if (!read.startsWith(value) || !(rest === '' || rest.startsWith(' ') || rest.startsWith(',')))
    return `the schema's default is ${value}; the type says ${tag}`;
  return undefined;
}

describe('option schemas and their options types', () => {
  it('give each option the default its type documents', () => {
    const found: string[] = [];
    for (const [schema, file, type] of SCHEMAS) {
      const rows = new Map(
        publicTypes()
          .rowsOfDeclaration(file, type)
          .map((row) => [row.name, row.default]),
      );
      expect([...rows.keys()].sort(), type).toEqual(Object.keys(schema).sort());
      for (const [name, spec] of Object.entries(schema)) {
        const why = disagreement(spec, rows.get(name) ?? '-');
        if (why !== undefined) found.push(`${type}.${name}: ${why}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('covers every schema declared against an options type', () => {
    const root = join(import.meta.dirname, '../..');
    const declared = readdirSync(join(root, 'packages'), { recursive: true, encoding: 'utf8' })
      .filter((file) => /\/src\/.*\.ts$/.test(file) && !file.includes('node_modules'))
      .flatMap((file) => [
        ...readFileSync(join(root, 'packages', file), 'utf8').matchAll(/^\} as const satisfies SchemaOf<(\w+)/gm),
      ])
      .map((match) => match[1]);
    expect(declared.sort()).toEqual(SCHEMAS.map(([, , type]) => type).sort());
  });

  it('refuses a default the tag does not document', () => {
    const check = positiveInteger;
    expect(disagreement(option(check, 64, 'DEFAULT_MAX_BATCH'), 'DEFAULT_MAX_BATCH (64)')).toBeUndefined();
    expect(disagreement(option(check, 64, 'DEFAULT_MAX_BATCH'), 'DEFAULT_MAX_BATCH (640)')).toBeDefined();
    expect(disagreement(option(check, 64, 'DEFAULT_MAX_BATCH'), 'DEFAULT_BATCH (64)')).toBeDefined();
    expect(disagreement(option(check, 10_000), '10_000')).toBeUndefined();
    expect(disagreement(option(check, 1), '10')).toBeDefined();
    expect(disagreement(option(String, 'fifo'), "'local'")).toBeDefined();
    expect(disagreement(option(String, ''), "'' (the root)")).toBeUndefined();
    expect(disagreement(optional(check), 'the first plan')).toBeUndefined();
    expect(disagreement(optional(check), 'DEFAULT_TURN_LEASE_MS (10_000), or more')).toBeUndefined();
    expect(disagreement(optional(check), 'DEFAULT_MAX_BATCH (64)')).toBeDefined();
    expect(disagreement(optional(check), '-')).toBeUndefined();
    expect(disagreement(required(check), 'required')).toBeUndefined();
    expect(disagreement(required(check), '-')).toBeDefined();
    expect(disagreement(optional(check), 'required')).toBeDefined();
  });
});
