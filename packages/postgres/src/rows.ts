/**
 * What one call reads and writes: it locks the keys it touches (advisory locks, sorted, so two calls never
 * wait on each other in a cycle), reads their rows and the database's time into a ScratchState, and writes
 * back what the memory engine's functions changed there. The SQL carries its values as literals, so that the
 * locks and the reads ride with BEGIN and the writes with COMMIT (see Transaction).
 */
import { decode, keyText } from './codec.js';
import { EXPIRING, type ExpiringTable } from './schema.js';
import { ScratchState } from './scratch.js';
import { CLOCK_MS, type Transaction } from './transaction.js';

/** The keys of each expiring table one call touches (core's compositeKey strings), and its prefix's version. */
export type Touched = { readonly [T in ExpiringTable]?: readonly string[] } & { readonly prefix?: string };

const textArray = (tx: Transaction, values: readonly string[]): string =>
  `ARRAY[${values.map((v) => tx.literal(v)).join(', ')}]::text[]`;

/**
 * The statement that takes a transaction-scoped advisory lock per name, in the order of their hashes: every
 * call that touches a row (or a row not there yet) holds its name's lock first. Absent rows are locked too; a
 * hash shared by two names only makes their calls wait for each other. Undefined: no name.
 */
export function lockSql(tx: Transaction, names: readonly string[]): string | undefined {
  if (names.length === 0) return undefined;
  return (
    'SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(n, 0) AS h FROM ' +
    `unnest(${textArray(tx, names.map(keyText))}) AS n ORDER BY h) AS l`
  );
}

interface LoadedRow {
  t: string;
  key: string | null;
  value: string | null;
  expires_at: number | null;
}

/** The statement that reads the rows of `touched` that have not expired, the prefix's version and the time. */
export function loadSql(tx: Transaction, schema: string, touched: Touched): string {
  const s = `"${schema}"`;
  const parts = [`SELECT 'now' AS t, NULL::text AS key, NULL::text AS value, c.now AS expires_at FROM c`];
  if (touched.prefix !== undefined)
    parts.push(
      `SELECT 'version', NULL, version::text, NULL FROM ${s}.versions WHERE prefix = ${tx.literal(keyText(touched.prefix))}`,
    );
  for (const table of EXPIRING) {
    const keys = touched[table];
    if (keys === undefined || keys.length === 0) continue;
    parts.push(
      `SELECT '${table}', key, value, expires_at FROM ${s}.${table}, c ` +
        `WHERE key = ANY(${textArray(tx, keys.map(keyText))}) AND expires_at > c.now`,
    );
  }
  return `WITH c AS MATERIALIZED (SELECT ${CLOCK_MS} AS now) ${parts.join(' UNION ALL ')}`;
}

/** The rows loadSql read, as a scratch state whose clock is the database's time it read. */
export function scratchOf(rows: readonly LoadedRow[], touched: Touched): ScratchState {
  const now = rows.find((r) => r.t === 'now')?.expires_at;
  if (typeof now !== 'number') throw new Error('PostgreSQL answered no time');
  const originals = new Map<string, string>();
  for (const table of EXPIRING) for (const key of touched[table] ?? []) originals.set(`${table}\0${keyText(key)}`, key);
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
 * The statement that writes back what the call changed in `data`: upserts and deletes per table, and the
 * prefix's version raised (never lowered) when the call raised it. Undefined: nothing changed.
 */
export function saveSql(
  tx: Transaction,
  schema: string,
  data: ScratchState,
  prefix: string | undefined,
  loadedVersion: number | undefined,
): string | undefined {
  const s = `"${schema}"`;
  const ctes: string[] = [];
  for (const table of EXPIRING) {
    const { upserts, deletes } = data.table(table).changes();
    if (deletes.length > 0)
      ctes.push(`d_${table} AS (DELETE FROM ${s}.${table} WHERE key = ANY(${textArray(tx, deletes.map(keyText))}))`);
    if (upserts.length > 0) {
      tx.written += upserts.length;
      const keys = textArray(
        tx,
        upserts.map((r) => keyText(r.key)),
      );
      const values = textArray(
        tx,
        upserts.map((r) => r.value),
      );
      // Through text: 'Infinity' is a float8, and String() of a double reads back as the same double.
      const expiries = `${textArray(
        tx,
        upserts.map((r) => String(r.expiresAt)),
      )}::float8[]`;
      ctes.push(
        `u_${table} AS (INSERT INTO ${s}.${table} (key, value, expires_at) SELECT * FROM unnest(${keys}, ${values}, ` +
          `${expiries}) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at)`,
      );
    }
  }
  const version = prefix === undefined ? undefined : data.versions.get(prefix);
  if (prefix !== undefined && version !== undefined && version !== loadedVersion)
    ctes.push(
      `v AS (INSERT INTO ${s}.versions (prefix, version) VALUES (${tx.literal(keyText(prefix))}, ` +
        `${tx.literal(String(version))}::bigint) ON CONFLICT (prefix) DO UPDATE ` +
        `SET version = GREATEST(${s}.versions.version, EXCLUDED.version))`,
    );
  return ctes.length === 0 ? undefined : `WITH ${ctes.join(', ')} SELECT 1`;
}
