import type { Decision } from '../../foundation/decision.js';
import { SluiceError, SluiceTypeError, inCall } from '../../foundation/errors.js';
import { describe } from '../../foundation/validate.js';
import type { Limiter } from '../../engine/limiter.js';
import type { Permits } from '../../engine/store.js';

/** The part of a BullMQ Job the processor reads. */
export interface JobLike {
  readonly id?: string | undefined;
  readonly name: string;
  readonly data: unknown;
  readonly queueName?: string;
}

/** The part of a BullMQ Queue (the worker's own queue) that pauses it: `queue.rateLimit(ms)`. */
export interface RateLimitedQueue {
  /** Holds the queue's jobs for `expireTimeMs` on every worker (BullMQ's Queue.rateLimit). */
  rateLimit(expireTimeMs: number): Promise<void>;
}

/** rateLimitedProcessor's options: the HTTP adapters' vocabulary over a job. */
export interface BullmqRateLimitOptions<J extends JobLike> {
  /** The limiter a job must pass (any store: memory, exact, leased, divided). */
  limiter: Limiter;
  /** The worker's queue (a BullMQ `Queue` of the same name): paused for the limiter's wait, on every worker. */
  queue: RateLimitedQueue;
  /**
   * The job's key (a tenant, a downstream's name). BullMQ's rate limit holds the whole queue, so one key at its
   * limit holds every key's jobs for its wait (their order kept): keys that must not wait for each other belong
   * in queues of their own.
   * @default the queue's name: one limit for the queue
   */
  key?: (job: J) => string;
  /** Permits the job costs: a number, each rule's count (`{ rpm: 1, tpm: 1200 }`), or a function of the job. @default 1 */
  cost?: Permits | ((job: J) => Permits);
  /** The plan the job is decided under, for a limiter with plans. */
  plan?: (job: J) => string | undefined;
  /** Jobs for which this returns true run without a decision. */
  skip?: (job: J) => boolean;
  /** Called for each job held back, with the decision, before the queue is paused. */
  onLimited?: (decision: Decision, job: J) => void;
}

/**
 * BullMQ's signal for a job rate-limited by hand: the worker moves it back to the head of the wait list, as
 * it was, and waits for the queue's rate limit (BullMQ's RATE_LIMIT_ERROR, what `Worker.RateLimitError()` makes).
 */
const RATE_LIMIT_ERROR = 'bullmq:rateLimitExceeded';

/**
 * Wraps a BullMQ processor so that each job runs only once `limiter` admits it. A job the limiter refuses is
 * not failed and keeps its place: the queue is rate-limited for the decision's `retryAfterMs`
 * (`queue.rateLimit`, which every worker of the queue obeys) and the job goes back to the head of the wait
 * list by BullMQ's manual rate limit, to be tried first when the wait is over. A job that can never pass (a
 * cost above the limit) fails with SluiceError('NEVER_ALLOWED'); a key or cost function that throws fails the
 * job with its error (BullMQ's error path).
 * @example
 * ```ts
 * const queue = new Queue('mail', { connection })
 * const worker = new Worker('mail', rateLimitedProcessor(sendMail, { limiter, queue, key: (job) => job.data.tenant }), { connection })
 * ```
 */
export function rateLimitedProcessor<J extends JobLike, R, A extends unknown[]>(
  processor: (job: J, ...rest: A) => Promise<R>,
  options: BullmqRateLimitOptions<J>,
): (job: J, ...rest: A) => Promise<R> {
  return inCall('rateLimitedProcessor', () => {
    if (typeof processor !== 'function')
      throw new SluiceTypeError('processor', processor, `processor must be a function, got ${describe(processor)}`);
    const { limiter, queue, key, cost, plan, skip, onLimited } = options ?? ({} as BullmqRateLimitOptions<J>);
    if (typeof limiter?.tryAcquire !== 'function')
      throw new SluiceTypeError('limiter', limiter, `limiter must be a sluice Limiter, got ${describe(limiter)}`);
    if (typeof queue?.rateLimit !== 'function') {
      throw new SluiceTypeError(
        'queue',
        queue,
        `queue must be the worker's BullMQ Queue (it has rateLimit(ms)), got ${describe(queue)}`,
      );
    }
    for (const [name, value] of Object.entries({ key, plan, skip, onLimited })) {
      if (value !== undefined && typeof value !== 'function')
        throw new SluiceTypeError(name, value, `${name} must be a function of the job, got ${describe(value)}`);
    }
    return async (job: J, ...rest: A): Promise<R> => {
      if (skip?.(job) === true) return processor(job, ...rest);
      const permits = typeof cost === 'function' ? cost(job) : (cost ?? 1);
      const planName = plan?.(job);
      const decision = await limiter.tryAcquire(key?.(job) ?? `queue:${job.queueName ?? job.name}`, {
        permits,
        ...(planName === undefined ? {} : { plan: planName }),
      });
      if (decision.allowed) return processor(job, ...rest);
      if (!Number.isFinite(decision.retryAfterMs)) {
        throw new SluiceError(
          'NEVER_ALLOWED',
          `job ${job.id ?? job.name} costs more than rule ${JSON.stringify(decision.rule)} can ever grant`,
        );
      }
      onLimited?.(decision, job);
      await queue.rateLimit(Math.max(1, Math.ceil(decision.retryAfterMs)));
      throw Object.assign(new Error(RATE_LIMIT_ERROR), { name: 'RateLimitError' });
    };
  });
}
