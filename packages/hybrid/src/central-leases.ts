import type { Clock } from '@sluice/core';
import { type RedisConnection, stateKey, versionKeyBeside } from '@sluice/redis/internal';
import { type HeldLease, mustRegister } from './key-lease.js';
import { type LeaseReply, type LeaseRequest, type LeaseShape, giveBack, requestLease } from './lease-client.js';
import type { NodeIdentity } from '@sluice/core/internal';

/** The node that leases: its connection, its id among each key's lessees, and its clocks. */
export interface Lessee {
  readonly redis: RedisConnection;
  readonly identity: NodeIdentity;
  /** The client clock for the scripts, or undefined for Redis TIME. */
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
   * The names the rule's central states and their lessees live under ('~' is in no rule name, so they never
   * collide with an exact-mode limiter's states).
   */
  readonly stateName: string;
  readonly lesseesName: string;
  /** The configuration version leases are taken under, read per lease (a slot at a newer one refuses them). */
  readonly version: () => number;
  /** A lease is at most burst / (this x live lessees); undefined: no such cap. */
  readonly hoardingDivisor: number | undefined;
}

/**
 * One rule's central states on Redis as a node leases them (leased mode's keys, a divided limiter's reserve):
 * each key's state and its lessees under the limiter's prefix, a lease of some of its permits, and the
 * hand-back of what a lease has left.
 * @example
 * const central = new CentralLeases(ctx, { ...source, stateName: 'lease~fw', lesseesName: 'lessees~fw' })
 * const reply = await central.lease('user:1', shape, lease, 10, clock.now())
 */
export class CentralLeases {
  readonly #node: Lessee;
  readonly #o: LeaseSource;

  constructor(node: Lessee, source: LeaseSource) {
    this.#node = node;
    this.#o = source;
  }

  stateKey(key: string): string {
    return stateKey(this.#o.prefix, key, this.#o.stateName);
  }

  lesseesKey(key: string): string {
    return stateKey(this.#o.prefix, key, this.#o.lesseesName);
  }

  /** The configuration version check of `key`'s slot (live limits): its version key and the version leased under. */
  versionOf(key: string): NonNullable<LeaseRequest['version']> {
    const { prefix, version } = this.#o;
    return { key: versionKeyBeside(prefix, this.stateKey(key), this.#node.redis.isCluster), version: version() };
  }

  /** Asks Redis for up to `want` permits of `key` under `shape`, for `held`, a lease sent at `sentAt` (this process's clock). */
  lease(key: string, shape: LeaseShape, held: HeldLease, want: number, sentAt: number): Promise<LeaseReply> {
    const { redis, identity, decisionClock } = this.#node;
    const { liveMs, hoardingDivisor } = this.#o;
    return requestLease(redis, {
      stateKey: this.stateKey(key),
      lesseesKey: this.lesseesKey(key),
      shape,
      want,
      nodeId: identity.id,
      liveMs,
      nowMs: decisionClock?.now(),
      hoardingDivisor,
      register: mustRegister(held, sentAt, liveMs),
      version: this.versionOf(key),
    });
  }

  /** Hands back the whole permits `held` has left of `key`, unless its window has ended (see giveBack). */
  giveBack(key: string, shape: LeaseShape, held: HeldLease): Promise<void> {
    const { redis, clock, decisionClock } = this.#node;
    return giveBack(redis, this.stateKey(key), shape, held, clock.now(), decisionClock?.now());
  }
}
