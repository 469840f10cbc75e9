import { type Decision, FALLBACK_RETRY_MS, neverWhileAway } from '../../foundation/decision.js';
import { SluiceError, SluiceTypeError, inCall } from '../../foundation/errors.js';
import { type OptionNames, knownOptions } from '../../foundation/options.js';
import { describe } from '../../foundation/validate.js';
import type { Limiter } from '../../engine/limiter-types.js';
import type { Permits } from '../../engine/store.js';

/** The part of a BullMQ Job the processor reads. */
export interface JobLike {
  readonly id?: string | undefined;
  readonly name: string;
  readonly data: unknown;
  readonly queueName?: string;
  /**
   * Moves the active job to the delayed set until `timestamp` (BullMQ's Job.moveToDelayed, with the token the
   * worker passed the processor): how one key's refused job waits without holding the others.
   */
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
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
  /**
   * The worker's queue (a BullMQ `Queue` of the same name): paused for the limiter's wait, on every worker, when
   * the refusal holds every job (see `key`).
   */
  queue: RateLimitedQueue;
  /**
   * The job's key (a tenant, a downstream's name). A refusal of the key's own (its rules, a ban, a deny-list
   * entry) delays that job alone (BullMQ's delayed set) while other keys' jobs run on; a refusal by a rule
   * every key shares (a rule with a fixed `scope: 'global'`), or of the queue's own key, holds the whole queue.
   * @default the queue's name: one limit for the queue
   */
  key?: (job: J) => string;
  /** Permits the job takes: a number, each rule's count (`{ rpm: 1, tpm: 1200 }`), or a function of the job. @default 1 */
  permits?: Permits | ((job: J) => Permits);
  /** The plan the job is decided under, for a limiter with plans. */
  plan?: (job: J) => string | undefined;
  /** Jobs for which this returns true run without a decision. */
  skip?: (job: J) => boolean;
  /** Called for each job held back, with the decision, before the job is delayed or the queue paused. */
  onLimited?: (decision: Decision, job: J) => void;
}

const BULLMQ_OPTIONS: OptionNames<BullmqRateLimitOptions<JobLike>> = {
  limiter: true,
  queue: true,
  key: true,
  permits: true,
  plan: true,
  skip: true,
  onLimited: true,
};

/**
 * BullMQ's signal for a job rate-limited by hand: the worker moves it back to the head of the wait list, as
 * it was, and waits for the queue's rate limit (BullMQ's RATE_LIMIT_ERROR, what `Worker.RateLimitError()` makes).
 */
const RATE_LIMIT_ERROR = 'bullmq:rateLimitExceeded';

/** BullMQ's signal for a job the processor moved to the delayed set itself (its DelayedError): not a failure. */
const DELAYED_ERROR = 'bullmq:movedToDelayed';

/**
 * Whether a refusal is the key's own: a ban or an access-list entry of the key, or a rule counted per key (or
 * per group of keys, `key: (k) => tenantOf(k)`). A rule with a fixed `key` counts every key's jobs together:
 * it refuses the next job of any key alike.
 */
function ownRefusal(limiter: Limiter, decision: Decision, planName: string | undefined): boolean {
  if (decision.blocked === true || decision.access !== undefined) return true;
  // A fail mode's refusal that counted nothing of the key (its limit whole: failMode 'closed') is the store's
  // being away, which every job shares; one 'local' counted for the key is the key's.
  if (decision.source === 'fallback' && decision.resetAfterMs === 0) return false;
  const rules = (planName === undefined ? undefined : limiter.plans?.[planName]) ?? limiter.rules;
  return typeof rules.find((rule) => rule.name === decision.rule)?.scope !== 'string';
}

/**
 * Wraps a BullMQ processor so that each job runs only once `limiter` admits it. A job the limiter refuses is
 * not failed. Refused for its own key (with `key`: the tenant's rules, a ban, a deny-list entry), it waits
 * alone: moved to BullMQ's delayed set for the decision's `retryAfterMs`, it comes back to the wait list
 * then, behind the jobs waiting there, while other keys' jobs run on. Refused for every job (the queue's own
 * key, or a rule all keys share), it keeps its place: the queue is rate-limited for `retryAfterMs`
 * (`queue.rateLimit`, which every worker of the queue obeys) and the job goes back to the head of the wait
 * list by BullMQ's manual rate limit. A refusal by the store's fail mode while its backend is away
 * (failMode 'closed', or a share that cannot fit the job) is every job's too: the queue waits. A job that
 * can never pass (more permits than the limit, a deny-list entry that does not expire) fails with
 * SluiceError('NEVER_ALLOWED'); a key or permits function that throws fails the job with its error (BullMQ's
 * error path).
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
    knownOptions('rateLimitedProcessor options', BULLMQ_OPTIONS, options, true);
    const { limiter, queue, key, permits: permitsOf, plan, skip, onLimited } = options;
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
      const permits = typeof permitsOf === 'function' ? permitsOf(job) : (permitsOf ?? 1);
      const planName = plan?.(job);
      const decision = await limiter.tryAcquire(key?.(job) ?? `queue:${job.queueName ?? job.name}`, {
        permits,
        ...(planName === undefined ? {} : { plan: planName }),
      });
      if (decision.allowed) return processor(job, ...rest);
      if (neverWhileAway(decision)) {
        // Never under the fail mode's share is not never: the queue waits for the store, as the limiter's calls do.
        onLimited?.(decision, job);
        return holdQueue(queue, FALLBACK_RETRY_MS);
      }
      if (!Number.isFinite(decision.retryAfterMs)) {
        throw new SluiceError(
          'NEVER_ALLOWED',
          decision.access === undefined
            ? `job ${job.id ?? job.name} asks more permits than rule ${JSON.stringify(decision.rule)} can ever grant`
            : `job ${job.id ?? job.name}'s key is on the deny list with no expiry`,
        );
      }
      onLimited?.(decision, job);
      const waitMs = Math.max(1, Math.ceil(decision.retryAfterMs));
      if (key !== undefined && ownRefusal(limiter, decision, planName)) {
        // BullMQ's delays are wall-clock times; the token (the processor's second argument) proves the lock.
        const token = typeof rest[0] === 'string' ? rest[0] : undefined;
        await job.moveToDelayed(Date.now() + waitMs, token);
        throw Object.assign(new Error(DELAYED_ERROR), { name: 'DelayedError' });
      }
      return holdQueue(queue, waitMs);
    };
  });
}

/** Holds the whole queue for `ms` on every worker, and hands the job back to the head of the wait list. */
async function holdQueue(queue: RateLimitedQueue, ms: number): Promise<never> {
  await queue.rateLimit(ms);
  throw Object.assign(new Error(RATE_LIMIT_ERROR), { name: 'RateLimitError' });
}
