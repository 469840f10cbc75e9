export { leasedLimiter } from './leased-limiter.js';
export type { LeasedLimiter, LeasedLimiterOptions } from './leased-limiter.js';
export type { LeaseEvent, LeasedEvents } from './leased-store.js';
export { HybridLimiter } from './hybrid-limiter.js';
export { divideShares } from './shares.js';
export type { NodeDemand, ShareMode } from './shares.js';
export { dividedLimiter } from './divided-limiter.js';
export type { DividedLimiter, DividedLimiterOptions } from './divided-limiter.js';
export type { DividedEvents, MembershipEvent } from './divided-store.js';
