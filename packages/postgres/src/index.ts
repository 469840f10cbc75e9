/**
 * `@sluice/postgres`: sluice on PostgreSQL. `postgresStore` is exact mode (a Store for createLimiter);
 * `postgresEngine` is the engine contract (`@sluice/core/engine`) it runs on, passing core's conformance suite.
 * Leased and divided modes over it land with issue #46.
 *
 * @example
 * import pg from 'pg'
 * import { createLimiter, tokenBucket } from '@sluice/core'
 * import { postgresStore } from '@sluice/postgres'
 * const store = postgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }), store })
 */
export { postgresEngine } from './postgres-engine.js';
export type { PostgresEngineOptions } from './engine-options.js';
export { PostgresStore, postgresStore } from './postgres-store.js';
export type { PostgresStoreEvents } from './postgres-store.js';
export type { PostgresStoreOptions } from './store-options.js';
