import type { Clock } from '@sluice/core';
import { type Engine, type EngineRules, isStale } from '@sluice/core/engine';
import { type EngineHost, type NodeIdentity, StaleConfigurationError } from '@sluice/core/internal';
import { type HeldLease, mustRegister } from './key-lease.js';
import { type LeaseReply, type LeaseShape, leaseReply } from './lease-client.js';

/** The node that leases: the engine it leases from, its id among each key's lessees, and its clocks. */
export interface Lessee {
  readonly engine: Engine;
  /** Where a failure about a key is probed (the engine's package knows). */
  readonly host: Pick<EngineHost, 'probeKey'>;
  readonly identity: NodeIdentity;
  /** The client clock the engine is given, or undefined for the engine's own. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock: when a lease was taken, whether its window has ended. */
  readonly clock: Clock;
}

/** Where a node leases one rule's permits from. */
export interface LeaseSource {
  readonly prefix: string;
  /** How long this node counts as a live lessee of a key after a lease. */
  readonly liveMs: number;
  /**
   * The name the rule's central states live under ('~' is in no rule name, so they never collide with an
   * exact-mode limiter's states); the engine keeps each key's lessees beside its state.
   */
  readonly stateName: string;
  /** The configuration version leases are taken under, read per call (a newer one refuses them). */
  readonly version: () => number;
  /** A lease is at most burst / (this x live lessees); undefined: no such cap. */
  readonly hoardingDivisor: number | undefined;
}

/** What a held lease hands back: its whole permits left, and when it was leased (the engine's decidedAtMs). */
interface Returnable {
  available: number;
  readonly expiresAt: number;
  readonly leasedAt: number;
}

/**
 * One rule's central states as a node leases them through the engine (leased mode's keys, a divided limiter's
 * reserve): a lease of some of a key's permits, the hand-back of what a lease has left, and the controls that
 * reach the central state (a penalty past what the lease covers, a reset). A call the engine refuses as stale
 * rejects with StaleConfigurationError (nothing taken); deadlines are the caller's (a late lease is still
 * credited), so the engine is one without its own.
 * @example
 * const central = new CentralLeases(node, { prefix: 'api', liveMs: 3_000, stateName: 'lease~fw', version: () => 1, hoardingDivisor: 4 })
 * const reply = await central.lease('user:1', shape, lease, 10, clock.now())
 */
export class CentralLeases {
  readonly #node: Lessee;
  readonly #o: LeaseSource;

  constructor(node: Lessee, source: LeaseSource) {
    this.#node = node;
    this.#o = source;
  }

  /**
   * Where the store's health probe asks after a failed call about `key`'s central state (on a Redis Cluster,
   * the failing slot's primary).
   */
  stateKey(key: string): string {
    return this.#node.host.probeKey(this.#o.prefix, key, this.#o.stateName);
  }

  /** The rules a call names: the shape's rule under this source's state name, at the version in force (or none). */
  #rules(shape: LeaseShape, versioned: boolean): EngineRules {
    const { prefix, stateName, version } = this.#o;
    return { prefix, rules: [shape.rule], states: [stateName], version: versioned ? version() : undefined };
  }

  /** Asks the engine for up to `want` permits of `key` under `shape`, for `held`, a lease sent at `sentAt` (this process's clock). */
  async lease(key: string, shape: LeaseShape, held: HeldLease, want: number, sentAt: number): Promise<LeaseReply> {
    const { engine, identity, decisionClock } = this.#node;
    const { liveMs, hoardingDivisor } = this.#o;
    const answer = await engine.lease(
      this.#rules(shape, true),
      { key, want, node: identity.id, liveMs, hoardingDivisor, register: mustRegister(held, sentAt, liveMs) },
      decisionClock?.now(),
    );
    if (isStale(answer)) throw new StaleConfigurationError(answer.stale);
    return leaseReply(shape, answer);
  }

  /**
   * Hands back the whole permits `held` has left of `key` (the rule's own refund: a bucket refills up to its
   * capacity, a window takes them back only while the window the lease was counted in lasts), unless its
   * window has ended here. They leave `held` before the call, so a decision meanwhile cannot spend them too.
   * Under no version: the permits go back to the state they were leased from, whichever configuration is in force.
   */
  async giveBack(key: string, shape: LeaseShape, held: Returnable): Promise<void> {
    const { engine, clock, decisionClock } = this.#node;
    const permits = Math.floor(held.available);
    if (permits < 1 || clock.now() >= held.expiresAt) return;
    held.available -= permits;
    await engine.adjust(
      this.#rules(shape, false),
      key,
      { op: 'refund', permits, grantedAtMs: held.leasedAt },
      decisionClock?.now(),
    );
  }

  /**
   * Takes `permits` from `key`'s central state past its limit: a penalty this node's lease could not cover;
   * `versioned` false: whichever configuration is in force (a reserve's generation carries its own states).
   */
  async penalize(key: string, shape: LeaseShape, permits: number, versioned = true): Promise<void> {
    const answer = await this.#node.engine.adjust(
      this.#rules(shape, versioned),
      key,
      { op: 'penalize', permits },
      this.#node.decisionClock?.now(),
    );
    if (isStale(answer)) throw new StaleConfigurationError(answer.stale);
  }

  /** Forgets `key`'s central state and its lessees (every node's next lease starts fresh). */
  async reset(key: string, shape: LeaseShape): Promise<void> {
    const answer = await this.#node.engine.adjust(
      this.#rules(shape, true),
      key,
      { op: 'reset' },
      this.#node.decisionClock?.now(),
    );
    if (isStale(answer)) throw new StaleConfigurationError(answer.stale);
  }
}
