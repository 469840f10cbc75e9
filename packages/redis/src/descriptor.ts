import { type Algorithm, SluiceError } from '@sluice/core';
import { type RuleSpec, ruleSpec, OPERATIONS_DEADLINE_MS, withDeadline } from '@sluice/core/internal';
import type { RedisConnection } from './connection/connection.js';
import { descriptorKey } from './key-layout.js';
import { descriptorScript } from './scripts.js';

/** How long a descriptor outlives the last node that wrote it. */
const DESCRIPTOR_TTL_MS = 7 * 24 * 3_600_000;

/** What a limiter says it runs, for tools that read its state (the CLI): its mode and its first rules as data. */
export interface LimiterDescriptor {
  /** The store's mode: exact (redisStore), leased, divided. */
  readonly mode: 'exact' | 'leased' | 'divided';
  /** Its rules as data; undefined where they cannot be written down (a rule counted against a scope function). */
  readonly rules?: readonly RuleSpec[];
  /** Why `rules` is missing. */
  readonly why?: string;
}

/**
 * Writes what the limiter of `prefix` runs (descriptor.lua), for the CLI; a failure is left unsaid (the
 * descriptor is informational: decisions never read it).
 * @example
 * void writeDescriptor(connection, 'api', 'exact', [fixedWindow({ limit: 10, windowMs: 1_000 })])
 */
export async function writeDescriptor(
  connection: RedisConnection,
  prefix: string,
  mode: LimiterDescriptor['mode'],
  rules: readonly Algorithm[],
): Promise<void> {
  let descriptor: LimiterDescriptor;
  try {
    descriptor = { mode, rules: rules.map(ruleSpec) };
  } catch (error) {
    descriptor = { mode, why: error instanceof SluiceError ? error.message : String(error) };
  }
  await withDeadline(
    connection.runScript(
      descriptorScript(),
      [descriptorKey(prefix)],
      ['write', JSON.stringify(descriptor), String(DESCRIPTOR_TTL_MS)],
    ),
    OPERATIONS_DEADLINE_MS,
    'a descriptor write',
  ).catch(() => undefined);
}

/**
 * What the limiter of `prefix` says it runs, or undefined when none wrote it (no limiter of that prefix has
 * run on this Redis in the last week).
 * @example
 * const described = await readDescriptor(connection, 'api') // { mode: 'exact', rules: [...] }
 */
export async function readDescriptor(
  connection: RedisConnection,
  prefix: string,
): Promise<LimiterDescriptor | undefined> {
  const reply = await withDeadline(
    connection.runScript(descriptorScript(), [descriptorKey(prefix)], ['read']),
    OPERATIONS_DEADLINE_MS,
    'a descriptor read',
  );
  if (reply === null || reply === undefined) return undefined;
  return JSON.parse(String(reply)) as LimiterDescriptor;
}
