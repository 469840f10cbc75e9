import { EventEmitter } from 'eventemitter3';
import type { StoreEvents } from '@sluice/core/internal';

/** A listener of one of the shared events. */
type On<E extends keyof StoreEvents> = (...args: StoreEvents[E]) => void;

/**
 * The event emitter of a Redis-backed store whose events are `Events`: its listener methods declare one plain
 * signature per shared event before the generic one. TypeScript calls a method of a union of stores
 * (`mode === 'leased' ? leasedStore(o) : redisStore(o)`) only by signatures its members declare alike, and
 * never by generic ones that return each store's own type: with these, `store.on('store-error', ...)`
 * type-checks on the union, as switching modes is one line; each store alone still takes its own events.
 * @example
 * class MyStore extends StoreEmitter<StoreEvents & { lease: [LeaseEvent] }> {}
 */
export class StoreEmitter<Events extends StoreEvents> extends EventEmitter<Events> {
  /** Calls `fn` at each `store-error` (see StoreEvents). */
  override on(event: 'store-error', fn: On<'store-error'>, context?: unknown): this;
  /** Calls `fn` at each `store-recovered` (see StoreEvents). */
  override on(event: 'store-recovered', fn: On<'store-recovered'>, context?: unknown): this;
  /** Calls `fn` at each `reconfigured` (see StoreEvents). */
  override on(event: 'reconfigured', fn: On<'reconfigured'>, context?: unknown): this;
  /** Calls `fn` at each `fallback-charged` (see StoreEvents). */
  override on(event: 'fallback-charged', fn: On<'fallback-charged'>, context?: unknown): this;
  /** Calls `fn` at each `callback-error` (see StoreEvents). */
  override on(event: 'callback-error', fn: On<'callback-error'>, context?: unknown): this;
  /** Calls `fn` at each `event` of the store's event map (its mode's events and StoreEvents). */
  override on<E extends EventEmitter.EventNames<Events>>(
    event: E,
    fn: EventEmitter.EventListener<Events, E>,
    context?: unknown,
  ): this;
  override on(event: never, fn: never, context?: unknown): this {
    return super.on(event, fn, context);
  }

  /** Calls `fn` once, at the next `store-error` (see StoreEvents). */
  override once(event: 'store-error', fn: On<'store-error'>, context?: unknown): this;
  /** Calls `fn` once, at the next `store-recovered` (see StoreEvents). */
  override once(event: 'store-recovered', fn: On<'store-recovered'>, context?: unknown): this;
  /** Calls `fn` once, at the next `reconfigured` (see StoreEvents). */
  override once(event: 'reconfigured', fn: On<'reconfigured'>, context?: unknown): this;
  /** Calls `fn` once, at the next `fallback-charged` (see StoreEvents). */
  override once(event: 'fallback-charged', fn: On<'fallback-charged'>, context?: unknown): this;
  /** Calls `fn` once, at the next `callback-error` (see StoreEvents). */
  override once(event: 'callback-error', fn: On<'callback-error'>, context?: unknown): this;
  /** Calls `fn` once, at the next `event` of the store's event map (its mode's events and StoreEvents). */
  override once<E extends EventEmitter.EventNames<Events>>(
    event: E,
    fn: EventEmitter.EventListener<Events, E>,
    context?: unknown,
  ): this;
  override once(event: never, fn: never, context?: unknown): this {
    return super.once(event, fn, context);
  }

  /** Stops calling `fn` at `store-error` (see StoreEvents). */
  override off(event: 'store-error', fn?: On<'store-error'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `store-recovered` (see StoreEvents). */
  override off(event: 'store-recovered', fn?: On<'store-recovered'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `reconfigured` (see StoreEvents). */
  override off(event: 'reconfigured', fn?: On<'reconfigured'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `fallback-charged` (see StoreEvents). */
  override off(event: 'fallback-charged', fn?: On<'fallback-charged'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `callback-error` (see StoreEvents). */
  override off(event: 'callback-error', fn?: On<'callback-error'>, context?: unknown, once?: boolean): this;
  /** Stops calling `fn` at `event` of the store's event map (its mode's events and StoreEvents). */
  override off<E extends EventEmitter.EventNames<Events>>(
    event: E,
    fn?: EventEmitter.EventListener<Events, E>,
    context?: unknown,
    once?: boolean,
  ): this;
  override off(event: never, fn?: never, context?: unknown, once?: boolean): this {
    return super.off(event, fn, context, once);
  }
}
