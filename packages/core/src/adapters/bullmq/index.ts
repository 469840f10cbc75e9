/**
 * @sluice/core/bullmq: a BullMQ worker's processor that holds each job until a sluice limiter admits it,
 * through BullMQ's own manual rate limit (the job goes back to the head of the wait list, nothing fails).
 */
export { rateLimitedProcessor } from './processor.js';
export type { BullmqRateLimitOptions, JobLike, RateLimitedQueue } from './processor.js';
