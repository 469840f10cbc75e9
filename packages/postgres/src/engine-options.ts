import { SluiceTypeError } from '@sluice/core';
import {
  DEFAULT_TIMEOUT_MS,
  type SchemaOf,
  describeValue,
  option,
  parseOptions,
  required,
  timerDuration,
} from '@sluice/core/internal';
import type { Pool } from 'pg';
import { schemaValue } from './schema.js';

/** postgresEngine's options. */
export interface PostgresEngineOptions {
  /**
   * Your node-postgres pool (`new pg.Pool(...)`): each call takes a connection of it for one transaction, and
   * subscriptions hold one while any is listening. The engine never ends it.
   */
  pool: Pool;
  /**
   * Longest each engine call waits for PostgreSQL before it rejects (the modes' health machine and fail mode
   * take it from there; the engine has no fail mode of its own). A call past it commits nothing, and each
   * statement's `statement_timeout` is this plus 100 ms, so a wait on a lock ends on the server too. Before its
   * first call an engine checks (at the first ever, creates) its tables, waiting up to 5 s for that once: a
   * new database's first call is late rather than refused.
   * @default 50
   */
  timeoutMs?: number | undefined;
  /**
   * The PostgreSQL schema the engine's tables live in (created when missing): a lower-case SQL identifier.
   * Engines on one database share states, records and messages only when they name the same schema.
   * @default 'sluice'
   */
  schema?: string | undefined;
}

/** A node-postgres Pool, as far as the engine can tell: connect() and query(). */
export function poolValue(name: string, value: unknown): Pool {
  const pool = value as Partial<Pool> | null | undefined;
  if (
    typeof pool !== 'object' ||
    pool === null ||
    typeof pool.connect !== 'function' ||
    typeof pool.query !== 'function'
  )
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be a pg Pool (new Pool() of node-postgres), got ${describeValue(value)}`,
    );
  return value as Pool;
}

/** postgresEngine's options: each checked, with its default (see parseOptions); documented on PostgresEngineOptions. */
export const POSTGRES_ENGINE_OPTIONS = {
  pool: required(poolValue),
  timeoutMs: option(timerDuration, DEFAULT_TIMEOUT_MS),
  schema: option(schemaValue, 'sluice'),
} as const satisfies SchemaOf<PostgresEngineOptions>;

/** The options checked (an unknown one refused by name), with their defaults. */
export function parseEngineOptions(options: PostgresEngineOptions) {
  return parseOptions('postgresEngine options', POSTGRES_ENGINE_OPTIONS, options, true);
}
