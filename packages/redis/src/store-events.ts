import { EventEmitter } from 'eventemitter3';
import type { StoreEmitterOf, StoreEvents } from '@sluice/core/internal';

/**
 * The event emitter of a Redis-backed store whose events are `Events`: eventemitter3's, its listener methods typed by
 * core's StoreListeners, as every engine-backed store's are (so a union of stores takes
 * `store.on('store-error', ...)`).
 * @example
 * class RedisStore extends StoreEmitter<RedisStoreEvents> {}
 */
export const StoreEmitter = EventEmitter as unknown as StoreEmitterClass;

/** A constructor of emitters whose events are `Events` (see StoreEmitter). */
type StoreEmitterClass = new <Events extends StoreEvents>() => StoreEmitterOf<EventEmitter<Events>, Events>;
