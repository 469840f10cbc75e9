/**
 * The engine's tables, in a schema of their own (`sluice` by default): created once per engine, lazily, under
 * an advisory lock so that engines starting together do not race on CREATE ... IF NOT EXISTS.
 *
 * states, bans, lessees, fleets: one row per memory engine entry (the key is core's compositeKey, as keyText
 * stores it), the value as codec.ts encodes it, and when it expires on the database's clock (ms since the
 * epoch; Infinity: never). versions: each prefix's highest configuration version named. configs: each prefix's
 * configuration record.
 */
import { SluiceRangeError, SluiceTypeError } from '@sluice/core';
import { describeValue } from '@sluice/core/internal';
import type { Pool } from 'pg';

/** The tables whose rows expire, in the order a call loads and writes them. */
export const EXPIRING = ['states', 'bans', 'lessees', 'fleets'] as const;
export type ExpiringTable = (typeof EXPIRING)[number];

/** The advisory lock key (pg_advisory_lock's bigint) that serializes the tables' creation. */
const MIGRATE_LOCK = 0x5_1c_e0_01;

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** A schema name as the engine takes it: a lower-case SQL identifier (1-63 of [a-z0-9_], not starting with a digit). */
export function schemaValue(name: string, value: unknown): string {
  if (typeof value !== 'string')
    throw new SluiceTypeError(name, value, `${name} must be a string, got ${describeValue(value)}`);
  if (!IDENTIFIER.test(value))
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be a lower-case SQL identifier (1-63 of [a-z0-9_], not starting with a digit), got ${describeValue(value)}`,
    );
  return value;
}

/** The statements that create the schema and its tables (each IF NOT EXISTS). */
export function schemaStatements(schema: string): string[] {
  const s = `"${schema}"`;
  return [
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    ...EXPIRING.flatMap((table) => [
      `CREATE TABLE IF NOT EXISTS ${s}.${table} (key text PRIMARY KEY, value text NOT NULL, expires_at float8 NOT NULL)`,
      `CREATE INDEX IF NOT EXISTS ${table}_expiry ON ${s}.${table} (expires_at)`,
    ]),
    `CREATE TABLE IF NOT EXISTS ${s}.versions (prefix text PRIMARY KEY, version bigint NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${s}.configs (prefix text PRIMARY KEY, version bigint NOT NULL, text text NOT NULL)`,
  ];
}

/**
 * Creates the engine's tables when they are not there: on one connection of `pool`, under a session advisory
 * lock, so that two engines creating them at once do not collide (configs last: once it is there, all are).
 */
export async function migrate(pool: Pool, schema: string): Promise<void> {
  // The usual case, in one round trip: the last table made is there, so every one is.
  const { rows } = await pool.query<{ made: boolean }>('SELECT to_regclass($1) IS NOT NULL AS made', [
    `"${schema}".configs`,
  ]);
  if (rows[0]?.made === true) return;
  const client = await pool.connect();
  let failed: unknown;
  // A connection ended while checked out emits 'error' on its client (the pool hears only idle ones).
  const lost = (error: Error): void => {
    failed ??= error;
  };
  client.on('error', lost);
  try {
    await client.query(`SELECT pg_advisory_lock(${MIGRATE_LOCK})`);
    try {
      for (const statement of schemaStatements(schema)) await client.query(statement);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${MIGRATE_LOCK})`);
    }
  } catch (error) {
    failed = error;
    throw error;
  } finally {
    // A connection that failed midway may still hold the lock: it is closed, not pooled.
    client.off('error', lost);
    client.release(failed instanceof Error ? failed : undefined);
  }
}
