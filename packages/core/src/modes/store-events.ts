import type { Algorithm } from '../algorithms/algorithm.js';
import type { DecisionSource } from '../engine/observe.js';
import type { Decision } from '../foundation/decision.js';

/** A limiter's new configuration in force on this node, as the `reconfigured` event reports it. */
export interface ReconfiguredEvent {
  readonly prefix: string;
  readonly version: number;
  readonly rules: readonly Algorithm[];
}

/** What one limiter's fail mode charged to Redis when Redis answered again, as `fallback-charged` reports it. */
export interface FallbackChargedEvent {
  readonly prefix: string;
  /** Keys charged. */
  readonly keys: number;
  /** Permits charged over them. */
  readonly permits: number;
  /** Permits Redis could not take now (kept for the next recovery). */
  readonly kept: number;
}

/**
 * The events every Redis-backed store emits alike (redisStore, leasedStore, dividedStore): Redis failing and
 * answering again, a configuration learned, an outage's grants charged, a callback of yours that threw.
 * Each store's own event map adds its mode's events to these.
 */
export interface StoreEvents {
  /** Redis failed or missed the deadline: decisions follow the store's fail mode until it answers again. */
  'store-error': [error: Error];
  /** Redis answers again after a failure. */
  'store-recovered': [];
  /**
   * A limiter now decides under a configuration version it learned (limiter.reconfigure or override here or
   * on another node: read after a slot, a lease or a heartbeat said so, a message on its channel, or ready()).
   */
  reconfigured: [ReconfiguredEvent];
  /**
   * After an outage: what a limiter's fail mode (or a divided node's part of the reserve) granted, and its
   * state still held spent, was charged to Redis (see FallbackChargedEvent); once per limiter per recovery,
   * zeros included.
   */
  'fallback-charged': [FallbackChargedEvent];
  /** A callback of yours (an `onDecision`, a listener of these events) threw; the store went on. */
  'callback-error': [error: unknown, callback: string];
}

/** A reset, unblock or refund heard on a limiter's channel, as the `reset-heard` event reports it. */
export interface ResetHeardEvent {
  readonly prefix: string;
  readonly key: string;
}

/** A change in the nodes a limiter's limits are shared by, as a store's `fleet` event reports it. */
export interface FleetEvent {
  readonly prefix: string;
  /** Live nodes of the limiter's fleet, this one included. */
  readonly nodes: number;
}

/** One decision, as a redisStore's `onDecision` sees it. */
export interface DecisionEvent {
  readonly prefix: string;
  readonly key: string;
  readonly decision: Decision;
  /**
   * The engine decided ('redis', 'postgres', or 'engine' for one of your own); 'deny_cache': the deny cache;
   * 'fallback': the fail mode (the names metrics use).
   */
  readonly source: Extract<DecisionSource, 'redis' | 'postgres' | 'engine' | 'deny_cache' | 'fallback'>;
  /** The decision time: Redis TIME or the client clock for 'redis', this process's clock otherwise. */
  readonly decidedAtMs: number;
  /**
   * For a policy decided slot by slot (rules in different Cluster slots): the time each rule's slot decided
   * at, in rule order (NaN for a rule not reached). `decidedAtMs` is the latest of them.
   */
  readonly ruleDecidedAtMs?: readonly number[];
}
