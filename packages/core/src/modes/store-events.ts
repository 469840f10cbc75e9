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

/** A listener of one of the shared events. */
type On<E extends keyof StoreEvents> = (...args: StoreEvents[E]) => void;

/**
 * The listener methods of an engine-backed store whose events are `Events` (its emitter is eventemitter3's,
 * typed by these): one plain signature per shared event before the generic one. TypeScript calls a method of
 * a union of stores (`mode === 'leased' ? leasedStore(o) : redisStore(o)`) only by signatures its members
 * declare alike, and never by generic ones that return each store's own type: with these,
 * `store.on('store-error', ...)` type-checks on the union, as switching modes is one line; each store alone
 * still takes its own events. A store's package makes its emitter class once (core holds no emitter):
 * `EventEmitter as unknown as new <E extends StoreEvents>() => StoreEmitterOf<EventEmitter<E>, E>`.
 */
export interface StoreListeners<Events extends StoreEvents> {
  /** Calls `fn` at each `store-error` (see StoreEvents). */
  on(event: 'store-error', fn: On<'store-error'>, context?: unknown): this;
  /** Calls `fn` at each `store-recovered` (see StoreEvents). */
  on(event: 'store-recovered', fn: On<'store-recovered'>, context?: unknown): this;
  /** Calls `fn` at each `reconfigured` (see StoreEvents). */
  on(event: 'reconfigured', fn: On<'reconfigured'>, context?: unknown): this;
  /** Calls `fn` at each `fallback-charged` (see StoreEvents). */
  on(event: 'fallback-charged', fn: On<'fallback-charged'>, context?: unknown): this;
  /** Calls `fn` at each `callback-error` (see StoreEvents). */
  on(event: 'callback-error', fn: On<'callback-error'>, context?: unknown): this;
  /** Calls `fn` at each `event` of this store's own. */
  on<E extends keyof Events>(event: E, fn: (...args: Events[E] & unknown[]) => void, context?: unknown): this;
  /** Calls `fn` at the next `store-error`. */
  once(event: 'store-error', fn: On<'store-error'>, context?: unknown): this;
  /** Calls `fn` at the next `store-recovered`. */
  once(event: 'store-recovered', fn: On<'store-recovered'>, context?: unknown): this;
  /** Calls `fn` at the next `reconfigured`. */
  once(event: 'reconfigured', fn: On<'reconfigured'>, context?: unknown): this;
  /** Calls `fn` at the next `fallback-charged`. */
  once(event: 'fallback-charged', fn: On<'fallback-charged'>, context?: unknown): this;
  /** Calls `fn` at the next `callback-error`. */
  once(event: 'callback-error', fn: On<'callback-error'>, context?: unknown): this;
  /** Calls `fn` at the next `event` of this store's own. */
  once<E extends keyof Events>(event: E, fn: (...args: Events[E] & unknown[]) => void, context?: unknown): this;
  /** Stops calling `fn` at `store-error` (every listener of it without one). */
  off(event: 'store-error', fn?: On<'store-error'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `store-recovered`. */
  off(event: 'store-recovered', fn?: On<'store-recovered'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `reconfigured`. */
  off(event: 'reconfigured', fn?: On<'reconfigured'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `fallback-charged`. */
  off(event: 'fallback-charged', fn?: On<'fallback-charged'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `callback-error`. */
  off(event: 'callback-error', fn?: On<'callback-error'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `event` of this store's own (every listener of it without one). */
  off<E extends keyof Events>(
    event: E,
    fn?: (...args: Events[E] & unknown[]) => void,
    context?: unknown,
    once?: boolean,
  ): this;
}

/** The methods StoreListeners types (a store's emitter keeps the rest of eventemitter3's as they are). */
export type ListenerMethod = 'on' | 'once' | 'off';

/** An emitter's type (eventemitter3's) with its listener methods typed by StoreListeners. */
export type StoreEmitterOf<Emitter, Events extends StoreEvents> = Omit<Emitter, ListenerMethod> &
  StoreListeners<Events>;
