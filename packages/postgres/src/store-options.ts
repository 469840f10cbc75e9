import {
  type DecisionEvent,
  ENGINE_BACKED_OPTIONS,
  type EngineBackedOptions,
  FAIL_MODE_OPTIONS,
  type FailModeOptions,
  type SchemaOf,
  booleanValue,
  functionValue,
  option,
  optional,
  parseOptions,
  required,
} from '@sluice/core/internal';
import type { Pool } from 'pg';
import { poolValue } from './engine-options.js';
import { schemaValue } from './schema.js';

/**
 * Options of `postgresStore`: its pool and schema, those of every engine-backed store that make sense without a
 * fleet count (clock, timeoutMs, maxKeys, assumedNodes), the fail mode, and exact mode's own (see docs/options.md).
 */
export interface PostgresStoreOptions
  extends Pick<EngineBackedOptions, 'clock' | 'timeoutMs' | 'maxKeys' | 'assumedNodes'>,
    FailModeOptions {
  /**
   * Your node-postgres pool (`new pg.Pool(...)`): each decision batch takes a connection of it for one
   * transaction; the deny cache's channel holds one while the store listens. The store never ends it.
   */
  pool: Pool;
  /**
   * The PostgreSQL schema the store's tables live in (created when missing): a lower-case SQL identifier. Stores
   * on one database share limits only when they name the same schema.
   * @default 'sluice'
   */
  schema?: string | undefined;
  /**
   * Answer a hot key's single-permit denials locally until they can change (see DenyCache), and drop them on
   * every node when a key is reset, unblocked or refunded (NOTIFY/LISTEN on the schema's channel).
   * @default true
   */
  denyCache?: boolean | undefined;
  /**
   * Called with every decision, where it came from, and the time it was made (for metrics and tests). Left
   * undefined it costs nothing.
   */
  onDecision?: ((event: DecisionEvent) => void) | undefined;
}

/** postgresStore's options: each checked, with its default (see parseOptions); documented on PostgresStoreOptions. */
export const POSTGRES_STORE_OPTIONS = {
  pool: required(poolValue),
  schema: option(schemaValue, 'sluice'),
  clock: ENGINE_BACKED_OPTIONS.clock,
  timeoutMs: ENGINE_BACKED_OPTIONS.timeoutMs,
  maxKeys: ENGINE_BACKED_OPTIONS.maxKeys,
  assumedNodes: ENGINE_BACKED_OPTIONS.assumedNodes,
  ...FAIL_MODE_OPTIONS,
  denyCache: option(booleanValue, true),
  onDecision: optional<(event: DecisionEvent) => void>(functionValue),
} as const satisfies SchemaOf<PostgresStoreOptions>;

/** The options checked (an unknown one refused by name), with their defaults. */
export function parseStoreOptions(options: PostgresStoreOptions) {
  return parseOptions('postgresStore options', POSTGRES_STORE_OPTIONS, options, true);
}
