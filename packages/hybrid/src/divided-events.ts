import type { StoreEvents } from '@sluice/core/internal';

/** A change in a limiter's live nodes or in this node's share of its limit, as the `membership` event reports it. */
export interface MembershipEvent {
  /** The limiter's prefix and rule: a store's limiters each have a fleet of their own. */
  readonly prefix: string;
  readonly rule: string;
  readonly nodes: number;
  /** This node's fraction of the limit. */
  readonly share: number;
}

/**
 * Events of a divided limiter (it is an EventEmitter): those of every Redis-backed store (StoreEvents: a
 * heartbeat or a draw failing and Redis answering again, a configuration learned at a heartbeat, the reserve's
 * outage grants charged, a callback that threw) and divided mode's own. While Redis fails this node keeps its
 * last share and holds its part of the reserve locally.
 */
export interface DividedEvents extends StoreEvents {
  membership: [MembershipEvent];
}
