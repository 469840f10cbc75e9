export { DEFAULT_LIVE_MS, DEFAULT_LOW_WATER, DEFAULT_TARGET_MS, leasedStore } from './leased-options.js';
export type { LeasedStoreOptions } from './leased-options.js';
export type { LeaseEvent, LeasedEvents, LeasedStore } from './leased-store.js';
export { divideShares } from './shares.js';
export type { NodeDemand, ShareMode } from './shares.js';
export { dividedStore } from './divided-options.js';
export type { DividedStoreOptions } from './divided-options.js';
export type { DividedEvents, DividedStore, MembershipEvent } from './divided-store.js';
