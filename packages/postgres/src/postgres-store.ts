import { type Clock, SluiceError, type Store } from '@sluice/core';
import type { Engine } from '@sluice/core/engine';
import {
  type BoundStore,
  EngineHealth,
  ExactStore,
  type FailMode,
  Fallback,
  type FleetShare,
  OPERATIONS_DEADLINE_MS,
  type ResetHeardEvent,
  type RuleSet,
  type StoreCapabilities,
  type StoreEvents,
  emitSafely,
  inCall,
  storeClocks,
} from '@sluice/core/internal';
import { poolHealthProbe } from './health-probe.js';
import { postgresEngine } from './postgres-engine.js';
import { StoreEmitter } from './store-emitter.js';
import { type PostgresStoreOptions, parseStoreOptions } from './store-options.js';

/** Events of a PostgresStore: those of every engine-backed store (StoreEvents) and exact mode's own. */
export interface PostgresStoreEvents extends StoreEvents {
  /**
   * A reset, unblock or refund of `key` was heard (LISTEN, from any node, this one included): the deny caches
   * here dropped it.
   */
  'reset-heard': [ResetHeardEvent];
}

/**
 * What postgresStore does not do yet: concurrency limiters' slots and throttles' pauses (a concurrencyLimiter
 * refuses the store; a throttle's pauses hold in its process), access lists (their changes are refused), and
 * the limited-keys board (`topLimited` counts this process's limited keys only).
 */
const POSTGRES_CAPABILITIES: StoreCapabilities = {
  name: 'postgresStore',
  policies: true,
  plans: true,
  bans: true,
  accessLists: false,
};

/**
 * Exact central limiting on PostgreSQL: every decision is core's algorithm run in one transaction on the rows
 * of the key's rules (postgresEngine), so every node sharing the database and schema shares each limit exactly.
 * Assembled as redisStore's exact mode is (core's ExactStore): a deny cache per limiter whose resets every node
 * hears (NOTIFY/LISTEN), live limits (limiter.reconfigure, overrides), one health machine and one fail mode.
 * While PostgreSQL is away, failMode 'local' holds 1 / assumedNodes of each limit in this process (there is no
 * fleet count on PostgreSQL yet). See POSTGRES_CAPABILITIES for what it does not do yet.
 * @example
 * const store = postgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }), store })
 */
export class PostgresStore extends StoreEmitter<PostgresStoreEvents> implements Store {
  /** Defined in client-clock mode: limiters wait on the clock decisions are made with. */
  readonly clock: Clock | undefined;
  readonly timeoutMs: number;
  readonly failMode: FailMode;
  readonly capabilities: StoreCapabilities = POSTGRES_CAPABILITIES;
  readonly #engine: Engine;
  readonly #health: EngineHealth;
  readonly #exact: ExactStore;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    super();
    const o = parseStoreOptions(options);
    const { decisionClock, localClock } = storeClocks(o.clock);
    this.clock = decisionClock;
    this.timeoutMs = o.timeoutMs;
    this.failMode = o.failMode;
    this.#health = new EngineHealth({
      ...poolHealthProbe(o.pool),
      timeoutMs: o.timeoutMs,
      onChange: (healthy, error) => {
        if (healthy) emitSafely(this, 'store-recovered');
        else emitSafely(this, 'store-error', error);
        // What the fail mode granted meanwhile counts on PostgreSQL from now on.
        if (healthy) this.#exact.recovered();
      },
    });
    // Decisions keep their own deadline (timeoutMs) and late answers; configuration reads and writes, and the
    // first call's wait for the tables, wait as long as operations do.
    this.#engine = postgresEngine({ pool: o.pool, schema: o.schema, timeoutMs: OPERATIONS_DEADLINE_MS });
    const share: FleetShare = { fraction: 1 / o.assumedNodes };
    this.#exact = new ExactStore({
      engine: this.#engine,
      events: this,
      timeoutMs: o.timeoutMs,
      maxKeys: o.maxKeys,
      denyCache: o.denyCache,
      decisionClock,
      localClock,
      health: this.#health,
      fallback: new Fallback({ mode: o.failMode, clock: localClock, maxKeys: o.maxKeys, timeoutMs: o.timeoutMs }),
      failMode: o.failMode,
      onDecision: o.onDecision,
      holdPrefix: () => ({ share }),
    });
  }

  /**
   * Resolves once PostgreSQL answered (its tables made at the first ever call, waiting up to 5 s for that),
   * every limiter's channel is heard, and each decides under its configuration as stored. Rejects with
   * SluiceError 'STORE_UNAVAILABLE' when PostgreSQL did not answer (checked again by the next call). Decisions
   * never wait for it; `limiter.ready()` waits for it too.
   * @example
   * await store.ready() // at start-up: fail fast when the database is not there
   */
  async ready(): Promise<void> {
    if (this.#closed) throw new SluiceError('CLOSED', 'postgresStore: this store is closed');
    try {
      await this.#engine.readConfig('sluice-ready');
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new SluiceError('STORE_UNAVAILABLE', `postgresStore: PostgreSQL did not answer: ${message}`, {
        cause: error,
      });
    }
    await this.#exact.ready();
  }

  /** False from a failed call until PostgreSQL answers again. */
  get healthy(): boolean {
    return this.#health.healthy;
  }

  /** True while the fail mode decides because PostgreSQL is away (`sluice.store.degraded` in metrics). */
  get degraded(): boolean {
    return !this.#health.healthy;
  }

  /** Binds a limiter's rules under its prefix (see Store.bind). */
  bind(ruleSet: RuleSet): BoundStore {
    if (this.#closed) throw new SluiceError('CLOSED', 'postgresStore: this store is closed');
    return this.#exact.bind(ruleSet);
  }

  /**
   * Stops probing and listening (the listening connection goes back to the pool). The pool passed in stays
   * open (it is yours); limiters still bound to this store decide by its fail mode from now on.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#health.close();
    await this.#exact.close();
  }
}

/**
 * Exact mode on PostgreSQL (see PostgresStore): a Store for `createLimiter`, over your node-postgres pool.
 * Unknown options are refused by name.
 * @example
 * import pg from 'pg'
 * import { createLimiter, tokenBucket } from '@sluice/core'
 * import { postgresStore } from '@sluice/postgres'
import { StoreEmitter } from './store-emitter.js';
 * const store = postgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }), store })
 * await limiter.ready()
 * const decision = await limiter.tryAcquire('user:1')
 */
export function postgresStore(options: PostgresStoreOptions): PostgresStore {
  return inCall('postgresStore', () => new PostgresStore(options));
}
