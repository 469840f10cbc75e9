export type { LeasedStoreOptions } from './leased-options.js';
export { leasedStore } from './leased-store.js';
export type { LeasedStore } from './leased-store.js';
export type { LeaseEvent, LeasedEvents } from './leased-events.js';
export type { DividedStoreOptions } from './divided-options.js';
export { dividedStore } from './divided-store.js';
export type { DividedStore } from './divided-store.js';
export type { DividedEvents, MembershipEvent } from './divided-events.js';
