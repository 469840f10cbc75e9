import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

/** The admin connection tests start from: SLUICE_PG_URL, or the local server with trust auth. */
export const ADMIN_URL = process.env.SLUICE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of the suite's own, created on the admin connection's server. */
export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  /** A new pool on the database (ended with the suite); pool errors of killed connections are ignored. */
  pool(options?: pg.PoolConfig): pg.Pool;
}

/** Ends `pool`, not waiting past 2 s for a client a failed test never released (the drop then ends it). */
async function endPool(pool: pg.Pool): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    pool.end().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 2_000);
    }),
  ]);
  clearTimeout(timer);
}

function urlOf(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Creates a database with a unique name before the suite and drops it after (WITH (FORCE): connections a
 * test left open end with it). Never touches another database.
 */
export function useTestDatabase(): () => TestDatabase {
  const name = `sluice_test_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;
  const pools: pg.Pool[] = [];
  let ready = false;
  const database: TestDatabase = {
    name,
    url: urlOf(name),
    pool(options) {
      const pool = new pg.Pool({ connectionString: urlOf(name), ...options });
      pool.on('error', () => undefined);
      pools.push(pool);
      return pool;
    },
  };
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  beforeAll(async () => {
    await admin(`CREATE DATABASE "${name}"`);
    ready = true;
  });
  afterAll(async () => {
    // The pools end first (their connections close cleanly); FORCE then ends what a failed test left open.
    await Promise.all(pools.map((pool) => endPool(pool)));
    if (ready) await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
  return () => {
    if (!ready) throw new Error('useTestDatabase: used before its beforeAll ran');
    return database;
  };
}
