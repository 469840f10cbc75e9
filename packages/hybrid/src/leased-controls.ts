import type { Engine } from '@sluice/core/engine';
import { type Clock, SluiceError } from '@sluice/core';
import {
  type GrantSource,
  type EngineHealth,
  type FallbackBinding,
  staleVersionOf,
  withDeadline,
  type ExactBinding,
  encodeIdentity,
} from '@sluice/core/internal';
import type { CentralLeases } from './central-leases.js';
import type { ColdDemand } from './cold-demand.js';
import { type HeldLease, refundToLease } from './key-lease.js';
import type { LeaseShape } from './lease-client.js';

/**
 * A leased limiter's controls (reset, refund, penalize) on one key: first on what this node holds of its
 * lease, then on the key's central state, as exact mode's RedisControls are beside its decisions.
 * @example
 * const controls = new LeaseControls(parts)
 * await controls.penalize('user:1', 5) // from this node's lease, the rest from the central state
 */
export class LeaseControls {
  readonly #o: LeaseControlParts;

  constructor(parts: LeaseControlParts) {
    this.#o = parts;
  }

  /**
   * Forgets the key centrally (every node's next lease starts fresh) and drops this node's lease and fallback
   * state. Bounded by timeoutMs; a reset Redis could not do rejects with SluiceError('STORE_UNAVAILABLE').
   */
  async reset(key: string): Promise<void> {
    this.#o.leases.delete(key);
    this.#o.cold.delete(key);
    this.#o.fallback.reset(key);
    try {
      await withDeadline(this.#o.central.reset(key, this.#o.shape), this.#o.timeoutMs, 'reset');
      this.#announce(key);
    } catch (error) {
      // A newer configuration is no failure of Redis: the caller re-reads it and resets again.
      if (staleVersionOf(error) !== undefined) throw error;
      this.#o.health.reportFailure(error, this.#o.central.stateKey(key));
      const why = error instanceof Error ? error.message : String(error);
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `reset(${JSON.stringify(key)}) could not forget the key on Redis: ${why}`,
        { cause: error },
      );
    }
  }

  /**
   * Gives back to this node's lease what it spent there, up to `permits` (never more than the lease took
   * from Redis, so the fleet stays within the central limit); for a windowed rule only while the grant's
   * window lasts. A key that spent nothing from a lease here was decided exactly: the central state takes
   * it back (one adjust.lua call). A grant the fail mode made goes back to the fail mode's limiter only
   * ('local'; nowhere for 'open'), and one of unknown origin to the fail mode while Redis fails.
   */
  refund(key: string, permits: number, grantedMsAgo: number, grant: GrantSource | undefined): void | Promise<void> {
    if (grant === 'fallback' || (grant === undefined && !this.#o.health.healthy)) {
      this.#o.fallback.refund(key, permits, grantedMsAgo);
      return;
    }
    const lease = this.#o.leases.get(key);
    const now = this.#o.clock.now();
    // Nothing spent from a lease here: the grant was decided exactly, on the central state. Redis may have
    // permits again, whatever an empty lease said: the next request asks.
    if (lease === undefined || lease.spent === 0) {
      if (lease !== undefined) lease.emptyUntil = Number.NEGATIVE_INFINITY;
      // Announced by the exact refund when the central state was denying (ExactParts.publishRefund).
      return this.#o.exact.refund(key, permits, grantedMsAgo, grant);
    }
    refundToLease(lease, permits, grantedMsAgo, this.#o.shape.windowAt !== undefined, now);
  }

  /**
   * Takes `permits` from this node's lease, and what it cannot cover from the central state past its limit
   * (one adjust.lua call), so the whole fleet pays. While Redis fails, or when the call does, the fail
   * mode's limiter takes the rest (failMode 'local'); 'open' and 'closed' reject with STORE_UNAVAILABLE.
   */
  async penalize(key: string, permits: number): Promise<void> {
    const lease = this.#o.leases.get(key);
    const now = this.#o.clock.now();
    const fromLease = lease === undefined || now >= lease.expiresAt ? 0 : Math.min(lease.available, permits);
    if (lease !== undefined) lease.available -= fromLease;
    const rest = permits - fromLease;
    if (rest === 0) return;
    try {
      if (!this.#o.health.healthy) throw new SluiceError('STORE_UNAVAILABLE', 'Redis is failing');
      await withDeadline(this.#o.central.penalize(key, this.#o.shape, rest), this.#o.timeoutMs, 'a penalty');
      this.#o.health.reportSuccess();
    } catch (error) {
      if (staleVersionOf(error) !== undefined) {
        // Not taken: the caller re-reads the configuration and penalizes again (what the lease gave stays given).
        if (lease !== undefined) lease.available += fromLease;
        throw error;
      }
      if (!(error instanceof SluiceError)) this.#o.health.reportFailure(error, this.#o.central.stateKey(key));
      if (!this.#o.fallback.keepsState) {
        const why = error instanceof Error ? error.message : String(error);
        throw new SluiceError(
          'STORE_UNAVAILABLE',
          `penalize(${JSON.stringify(key)}) could not reach Redis, and failMode '${this.#o.fallback.mode}' keeps no ` +
            `state to apply it to: ${why}`,
          { cause: error },
        );
      }
      this.#o.fallback.penalize(key, rest);
    }
  }

  /**
   * Tells every node a reset reached `key`'s central state, so none goes on denying it from a lease that found
   * it spent (a refund there is announced by the exact refund, only when the state was denying). Not awaited: a
   * node that misses it asks again within DENY_CACHE_TRUST_MS.
   */
  #announce(key: string): void {
    this.#o.engine.publish(this.#o.prefix, encodeIdentity(key)).catch(() => undefined);
  }
}

/** The leases a binding holds, by key, as its controls read and drop them. */
export interface LeaseRecords {
  get(key: string): HeldLease | undefined;
  delete(key: string): boolean;
}

/** What a leased binding's controls act on: its leases, its rule's central state and its fail mode. */
export interface LeaseControlParts {
  /** Where a reset is announced (on the limiter's channel). */
  readonly engine: Engine;
  readonly prefix: string;
  readonly shape: LeaseShape;
  readonly central: CentralLeases;
  readonly leases: LeaseRecords;
  /** Demand of the keys with no lease record (a reset forgets it too). */
  readonly cold: ColdDemand;
  /** Exact mode on the central state: a grant no lease paid for is refunded there. */
  readonly exact: ExactBinding;
  readonly fallback: FallbackBinding;
  readonly health: EngineHealth;
  /** This process's clock. */
  readonly clock: Clock;
  readonly timeoutMs: number;
}
