/**
 * `@sluice/postgres`: the engine contract (`@sluice/core/engine`) on PostgreSQL. The modes over it (exact,
 * leased, divided) land with issue #46; today it is an Engine that passes core's conformance suite.
 *
 * @example
 * import pg from 'pg'
 * import { postgresEngine } from '@sluice/postgres'
 * const engine = postgresEngine({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) })
 */
export { postgresEngine } from './postgres-engine.js';
export type { PostgresEngineOptions } from './engine-options.js';
