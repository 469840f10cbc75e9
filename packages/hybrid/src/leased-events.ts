import type { FleetEvent, ResetHeardEvent, StoreEvents } from '@sluice/core/internal';

/** One lease taken from Redis, as the `lease` event reports it. */
export interface LeaseEvent {
  readonly key: string;
  /** Permits asked for: the adaptive batch, or what the request needed. */
  readonly want: number;
  readonly granted: number;
  /** Whole permits this node holds of the key after this lease (what it would strand if it died now). */
  readonly held: number;
  /** Nodes that leased this key recently (they share the hoarding cap). */
  readonly liveNodes: number;
  /** True when asked for ahead of need (the low-water mark), false when a caller was waiting for it. */
  readonly prefetch: boolean;
}

/**
 * Events of a leased limiter (it is an EventEmitter): those of every Redis-backed store (StoreEvents: Redis
 * failing and answering again, a configuration learned at a lease or on the limiter's channel, an outage's
 * grants charged, a callback that threw) and leased mode's own.
 */
export interface LeasedEvents extends StoreEvents {
  /** A lease came back from Redis. */
  lease: [LeaseEvent];
  /** failMode 'local': the live nodes of a limiter's fleet changed (its fail mode now holds 1 / nodes). */
  fleet: [FleetEvent];
  /**
   * A reset or refund of `key` was heard (pub/sub, from any node, this one included): a lease here that had
   * found the key's central state spent asks Redis again at the next request.
   */
  'reset-heard': [ResetHeardEvent];
}
