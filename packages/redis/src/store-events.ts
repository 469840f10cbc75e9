import { EventEmitter } from 'eventemitter3';
import type { ListenerMethod, StoreEvents, StoreListeners } from '@sluice/core/internal';

/**
 * The event emitter of a Redis-backed store whose events are `Events`: eventemitter3's, its listener methods
 * typed by core's StoreListeners (one plain signature per shared event before the generic one, so a union of
 * stores takes `store.on('store-error', ...)`).
 * @example
 * class MyStore extends StoreEmitter<StoreEvents & { lease: [LeaseEvent] }> {}
 */
export const StoreEmitter = EventEmitter as unknown as new <Events extends StoreEvents>() => Omit<
  EventEmitter<Events>,
  ListenerMethod
> &
  StoreListeners<Events>;
