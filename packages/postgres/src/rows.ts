/**
 * What one call reads and writes: it locks the keys it touches (advisory locks, sorted, so two calls never
 * wait on each other in a cycle), reads their rows and the database's time into a ScratchState, and writes
 * back what the memory engine's functions changed there.
 */
import type { PoolClient } from 'pg';
import { decode, keyText } from './codec.js';
import { EXPIRING, type ExpiringTable } from './schema.js';
import { ScratchState } from './scratch.js';
import { CLOCK_MS } from './transaction.js';

/** The keys of each expiring table one call touches (core's compositeKey strings), and its prefix's version. */
export type Touched = { readonly [T in ExpiringTable]?: readonly string[] } & { readonly prefix?: string };

/**
 * Takes a transaction-scoped advisory lock per name, in the order of their hashes: every call that touches a
 * row (or a row not there yet) holds its name's lock first. Absent rows are locked too, and no lock table
 * grows: a hash shared by two names only makes their calls wait for each other.
 */
export async function lockNames(client: PoolClient, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  await client.query(
    'SELECT pg_advisory_xact_lock(h) FROM ' +
      '(SELECT DISTINCT hashtextextended(n, 0) AS h FROM unnest($1::text[]) AS n ORDER BY h) AS l',
    [names.map(keyText)],
  );
}

interface LoadedRow {
  t: string;
  key: string | null;
  value: string | null;
  expires_at: number | null;
}

/**
 * Reads the rows of `touched` that have not expired, the prefix's version and the database's time (one
 * reading), into a scratch state whose clock is that time.
 */
export async function loadState(client: PoolClient, schema: string, touched: Touched): Promise<ScratchState> {
  const s = `"${schema}"`;
  const parts = [`SELECT 'now' AS t, NULL::text AS key, NULL::text AS value, c.now AS expires_at FROM c`];
  const params: unknown[] = [];
  const originals = new Map<string, string>();
  if (touched.prefix !== undefined) {
    params.push(keyText(touched.prefix));
    parts.push(`SELECT 'version', NULL, version::text, NULL FROM ${s}.versions WHERE prefix = $${params.length}`);
  }
  for (const table of EXPIRING) {
    const keys = touched[table];
    if (keys === undefined || keys.length === 0) continue;
    const texts = keys.map((k) => {
      const text = keyText(k);
      originals.set(`${table}\0${text}`, k);
      return text;
    });
    params.push(texts);
    parts.push(
      `SELECT '${table}', key, value, expires_at FROM ${s}.${table}, c ` +
        `WHERE key = ANY($${params.length}::text[]) AND expires_at > c.now`,
    );
  }
  const { rows } = await client.query<LoadedRow>(
    `WITH c AS MATERIALIZED (SELECT ${CLOCK_MS} AS now) ${parts.join(' UNION ALL ')}`,
    params,
  );
  const now = rows.find((r) => r.t === 'now')?.expires_at;
  if (typeof now !== 'number') throw new Error('PostgreSQL answered no time');
  const data = new ScratchState(now);
  for (const row of rows) {
    if (row.t === 'now') continue;
    if (row.t === 'version') {
      if (touched.prefix !== undefined) data.versions.set(touched.prefix, Number(row.value));
      continue;
    }
    const table = row.t as ExpiringTable;
    const key = originals.get(`${table}\0${row.key}`);
    if (key === undefined || row.value === null || row.expires_at === null) continue;
    data.table(table).load(key, decode(row.value), row.value, row.expires_at);
  }
  return data;
}

/**
 * Writes back what the call changed in `data`: upserts and deletes per table, and the prefix's version raised
 * (never lowered) when the call raised it. Nothing changed, nothing sent.
 */
export async function saveState(
  client: PoolClient,
  schema: string,
  data: ScratchState,
  prefix: string | undefined,
  loadedVersion: number | undefined,
): Promise<void> {
  const s = `"${schema}"`;
  const ctes: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown, type: string): string => {
    params.push(value);
    return `$${params.length}::${type}`;
  };
  for (const table of EXPIRING) {
    const { upserts, deletes } = data.table(table).changes();
    if (deletes.length > 0)
      ctes.push(`d_${table} AS (DELETE FROM ${s}.${table} WHERE key = ANY(${param(deletes.map(keyText), 'text[]')}))`);
    if (upserts.length > 0)
      ctes.push(
        `u_${table} AS (INSERT INTO ${s}.${table} (key, value, expires_at) SELECT * FROM unnest(` +
          `${param(
            upserts.map((r) => keyText(r.key)),
            'text[]',
          )}, ${param(
            upserts.map((r) => r.value),
            'text[]',
          )}, ${param(
            upserts.map((r) => r.expiresAt),
            'float8[]',
          )}) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at)`,
      );
  }
  const version = prefix === undefined ? undefined : data.versions.get(prefix);
  if (prefix !== undefined && version !== undefined && version !== loadedVersion)
    ctes.push(
      `v AS (INSERT INTO ${s}.versions (prefix, version) VALUES (${param(keyText(prefix), 'text')}, ` +
        `${param(String(version), 'bigint')}) ON CONFLICT (prefix) DO UPDATE ` +
        `SET version = GREATEST(${s}.versions.version, EXCLUDED.version))`,
    );
  if (ctes.length === 0) return;
  await client.query(`WITH ${ctes.join(', ')} SELECT 1`, params);
}
