export { DEFAULT_LIVE_MS, DEFAULT_LOW_WATER, DEFAULT_TARGET_MS } from './leased-options.js';
export type { LeasedStoreOptions } from './leased-options.js';
export { leasedStore } from './leased-store.js';
export type { LeaseEvent, LeasedEvents, LeasedStore } from './leased-store.js';
export { divideShares } from './shares.js';
export type { NodeDemand, ShareMode } from './shares.js';
export type { DividedStoreOptions } from './divided-options.js';
export { dividedStore } from './divided-store.js';
export type { DividedEvents, DividedStore, MembershipEvent } from './divided-store.js';
