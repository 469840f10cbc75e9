import {
  type AcquireOptions,
  type Algorithm,
  type Clock,
  type CommonLimiterOptions,
  type Decision,
  type Limiter,
  type PeekOptions,
  type PenalizeOptions,
  type RefundOptions,
  type Rules,
  SluiceError,
  type Store,
  type TryAcquireOptions,
  createLimiter,
} from '@sluice/core';
import { EventEmitter } from 'eventemitter3';

/** The hybrid modes, as their factories are named (errors name them). */
export type HybridMode = 'leasedLimiter' | 'dividedLimiter';

/** A hybrid mode's store: a Store with a start-up check. */
export interface HybridStore extends Store {
  /** Resolves once its start-up check passed (see HybridLimiter.ready). */
  ready(): Promise<void>;
}

/**
 * A Limiter over a hybrid store it owns, with the store's events. Decisions, waiting, validation and
 * errors are createLimiter's, so every mode behaves the same to callers.
 * @example
 * const limiter = leasedLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }), redis }) // a HybridLimiter
 * limiter.on('store-error', (e) => log.warn(e))
 */
export class HybridLimiter<Events extends EventEmitter.ValidEventTypes>
  extends EventEmitter<Events>
  implements Limiter
{
  readonly #limiter: Limiter;
  readonly #store: HybridStore;
  readonly #mode: HybridMode;
  #closed = false;

  /** `buildStore` gets this limiter as the store's event emitter. */
  constructor(
    mode: HybridMode,
    buildStore: (events: EventEmitter<Events>) => HybridStore,
    rules: Rules,
    limiterOptions: Pick<CommonLimiterOptions, 'prefix' | 'maxKeyLength' | 'shadow'> & { readonly plans?: unknown },
  ) {
    super();
    this.#mode = mode;
    this.#store = buildStore(this);
    const { prefix, maxKeyLength, shadow, plans } = limiterOptions;
    try {
      this.#limiter = createLimiter({
        rules,
        // Passed on, for the store to refuse by name (these modes hold no plans).
        ...(plans === undefined ? {} : { plans: plans as never }),
        store: this.#store,
        ...(prefix === undefined ? {} : { prefix }),
        ...(maxKeyLength === undefined ? {} : { maxKeyLength }),
        ...(shadow === undefined ? {} : { shadow }),
        // Waiting callers of a fleet retry spread over a few ms.
        retryJitterMs: 5,
      });
    } catch (error) {
      // A limiter option createLimiter refuses (prefix, shadow, ...): nothing half-built stays open.
      void this.#store.close().catch(() => undefined);
      throw error;
    }
  }

  get rules(): readonly Algorithm[] {
    return this.#limiter.rules;
  }

  get prefix(): string {
    return this.#limiter.prefix;
  }

  get clock(): Clock {
    return this.#limiter.clock;
  }

  /** Hybrid modes have no plans: one rule, leased or divided. */
  get plans(): undefined {
    return undefined;
  }

  tryAcquire(key: string, options?: TryAcquireOptions): Promise<Decision> {
    return this.#limiter.tryAcquire(key, options);
  }

  acquire(key: string, options?: AcquireOptions): Promise<number> {
    return this.#limiter.acquire(key, options);
  }

  peek(key: string, options?: PeekOptions): Promise<Decision> {
    return this.#limiter.peek(key, options);
  }

  /** See Limiter.refund: leased mode gives back to this node's lease what it spent; divided mode to this node's share. */
  refund(key: string, permits: number, options?: RefundOptions): Promise<void> {
    return this.#limiter.refund(key, permits, options);
  }

  /** See Limiter.penalize: leased mode takes from this node's lease, then from Redis; divided mode from this node's share. */
  penalize(key: string, permits: number, options?: PenalizeOptions): Promise<void> {
    return this.#limiter.penalize(key, permits, options);
  }

  /** Refused: a ban must hold on every node at every decision, which this mode decides without Redis. */
  async block(key: string, _ms: number): Promise<void> {
    throw new SluiceError(
      'UNSUPPORTED',
      `${this.#mode} cannot honour block(${JSON.stringify(key)}): a ban must hold fleet-wide at every decision, ` +
        `and this mode decides without asking Redis; use exact mode (@sluice/redis) for bans`,
    );
  }

  /** Refused, as block() is. */
  async unblock(key: string): Promise<void> {
    throw new SluiceError(
      'UNSUPPORTED',
      `${this.#mode} cannot honour unblock(${JSON.stringify(key)}): it keeps no bans (see block())`,
    );
  }

  /**
   * Resolves once the start-up check passed: the commands this mode's scripts run, on this limiter's keys.
   * Rejects with SluiceError 'STORE_MISCONFIGURED' naming what is wrong (a permission the Redis user lacks, a
   * client whose mode is not the server's; also reported as 'store-error' and a process warning), or
   * 'STORE_UNAVAILABLE' when Redis did not answer. Decisions never wait for it.
   */
  ready(): Promise<void> {
    return this.#store.ready();
  }

  reset(key: string): Promise<void> {
    return this.#limiter.reset(key);
  }

  /** Closes the limiter, then its store (a leased store hands unspent permits back; a divided one leaves). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#limiter.close();
    await this.#store.close();
  }
}
