import {
  type ConcurrencyAcquireOptions,
  type ConcurrencyLimiter,
  concurrencyLimiter,
} from '../concurrency/concurrency-limiter.js';
import type { Limiter } from '../engine/limiter-types.js';
import { MemoryPauses } from '../engine/memory-pauses.js';
import { MemoryStore } from '../engine/memory-store.js';
import { type ThrottleLeaveReason, type ThrottleEvent, observed, reportThrottle } from '../engine/observe.js';
import { type PauseBinding, hasPauses } from '../engine/pause-store.js';
import { checkPermitNames, permitsOption } from '../engine/rule-permits.js';
import { type ConcurrencyStore, KEEPS_PLACE, type KeepsPlace, keepsPlace } from '../engine/semaphore-store.js';
import type { Permits, RulePermits } from '../engine/store.js';
import { type Clock, timerSleep } from '../foundation/clock.js';
import { type Decision, FALLBACK_RETRY_MS, neverWhileAway } from '../foundation/decision.js';
import { SluiceError, SluiceRangeError, SluiceTypeError, callerNamed, inCall } from '../foundation/errors.js';
import { type ParsedOptions, knownOptions, parseOptions } from '../foundation/options.js';
import {
  DEFAULT_MAX_KEY_LENGTH,
  describe,
  nonNegativeOrInfinite,
  optionalSignal,
  priorityValue,
  rateLimitKey,
  timerDuration,
} from '../foundation/validate.js';
import { RUN_OPTIONS, type ThrottleFetchInit, throttledFetch } from './throttle-fetch.js';
import { DEFAULT_TURN_LEASE_MS, THROTTLE_OPTIONS, type ThrottleOptions } from './throttle-options.js';
import { CallTicket, type ThrottleTicket } from './ticket.js';

/** Options of `run`: which key, the permits it asks, how long it may wait, and its place in the queue. */
export interface ThrottleRunOptions {
  /** The key the call counts against. @default the throttle's `key` */
  key?: string;
  /**
   * What the call counts: a number of every rule, or each rule's own by name (`{ rpm: 1, tpm: 1_200 }`: one
   * request and an estimate of its tokens, decided at once). Correct it after the call with `ticket.settle`.
   * @default 1
   */
  permits?: number | RulePermits;
  /**
   * How long the call may wait for its start (its turn, the rate, any pause); past it, or as soon as it
   * cannot be met, the call rejects with SluiceError('WAIT_EXPIRED') having consumed nothing.
   * @default Infinity
   */
  maxWaitMs?: number;
  /** Aborting leaves the queue at once: the call rejects with SluiceError('ABORTED'), having consumed nothing. */
  signal?: AbortSignal;
  /**
   * Higher starts first: a call waits behind every call of its priority or higher (in every process, in
   * 'fifo' order on a shared store); an integer from -1000 to 1000.
   * @default 0
   */
  priority?: number;
}

/** A fleet-wide, ordered, pausable throttle for the calls a service makes (see `throttle`). */
export interface Throttle {
  /**
   * Waits for the call's turn (in arrival order, higher priority first), for the limiter to grant its
   * permits and for any pause to end, then calls `fn` with the call's ticket and returns what it returns.
   * Rejects with SluiceError 'QUEUE_FULL', 'WAIT_EXPIRED', 'ABORTED', 'CLOSED', 'NEVER_ALLOWED' (permits over a
   * rule's limit, or a blocked key) before `fn` runs, having consumed nothing; what `fn` throws is passed
   * through.
   */
  run<T>(fn: (ticket: ThrottleTicket) => T | Promise<T>, options?: ThrottleRunOptions): Promise<T>;
  /**
   * No call of `key` (every key when left out) starts for `ms`, in every process sharing the limiter's store
   * (a provider answered 429). A longer pause in force is kept: pauses only ever extend.
   */
  pause(ms: number, key?: string): Promise<void>;
  /** How long calls of `key` (the throttle's key when left out) stay paused now; 0 when they are not. */
  pausedFor(key?: string): Promise<number>;
  /**
   * A fetch that waits its turn, and on a 429 or 503 pauses every process for what the response's
   * `Retry-After` or `RateLimit` headers ask (clamped to minPauseMs..maxPauseMs) and sends the call again
   * once its turn comes, ahead of the calls of its priority that came after it (at most `maxRetries` times; a
   * body that cannot be read twice is not sent again). The call's throttle options go in `init.throttle`.
   * It settles nothing: a ticket's real cost is yours to tell.
   */
  fetch(input: string | URL | Request, init?: ThrottleFetchInit): Promise<Response>;
  /** How many calls of `key` (the throttle's key when left out) wait to start in this process now. */
  queued(key?: string): number;
  /** Rejects every waiting call with SluiceError('CLOSED') and stops; calls already started run on. */
  close(): Promise<void>;
  readonly limiter: Limiter;
  /** The key calls count against when they name none. */
  readonly key: string;
}

/** A call's grant, and when it was asked for on the limiter's clock (where a settlement's refund goes). */
interface Granted {
  readonly decision: Decision;
  readonly askedAt: number;
}

/** A SluiceError code as the reason a call left without starting. */
const LEAVE_REASONS: Partial<Record<string, ThrottleLeaveReason>> = {
  WAIT_EXPIRED: 'wait_expired',
  ABORTED: 'aborted',
  CLOSED: 'closed',
  QUEUE_FULL: 'queue_full',
  NEVER_ALLOWED: 'never_allowed',
};

/** The concurrency key of a throttle key's turn: apart from any key a concurrency limiter of the prefix uses. */
const turnKey = (key: string): string => `~turn:${key}`;

class FleetThrottle implements Throttle {
  readonly limiter: Limiter;
  readonly key: string;
  readonly #turns: ConcurrencyLimiter;
  readonly #pauses: PauseBinding;
  readonly #clock: Clock;
  readonly #options: ParsedOptions<typeof THROTTLE_OPTIONS>;
  /** Calls per key between `run` and their start (or leaving). */
  readonly #waiting = new Map<string, number>();
  readonly #closing = new AbortController();
  /**
   * Each waiting call's own signal, aborted by its caller's signal or by close(): one listener per call on
   * what it listens to, never hundreds on one shared signal.
   */
  readonly #active = new Set<AbortController>();
  readonly #stopHearing: () => void;
  /** A store of the throttle's own (order 'local', or a limiter's store that keeps no queue). */
  readonly #ownStore: MemoryStore | undefined;

  constructor(options: ThrottleOptions) {
    const o = parseOptions('throttle options', THROTTLE_OPTIONS, options, true);
    this.#options = o;
    this.limiter = o.limiter;
    this.key = o.key;
    this.#clock = o.limiter.clock;
    const store = o.limiter.store;
    const sharedQueue = o.order === 'fifo' && hasSemaphores(store);
    this.#ownStore = sharedQueue ? undefined : new MemoryStore({ clock: this.#clock });
    const queueStore = sharedQueue ? (store as unknown as ConcurrencyStore) : (this.#ownStore as MemoryStore);
    // A Redis store's lease must outlast 4 of its deadlines: a turn is renewed within one.
    const storeTimeout = (store as { timeoutMs?: unknown }).timeoutMs;
    const leastLease = sharedQueue && typeof storeTimeout === 'number' ? 4 * storeTimeout : 0;
    if (o.leaseMs !== undefined && o.leaseMs < leastLease) {
      throw new SluiceRangeError(
        'leaseMs',
        o.leaseMs,
        `leaseMs must leave room to renew the turn on the store: at least 4 x its timeoutMs (${leastLease} ms), ` +
          `got ${o.leaseMs}`,
      );
    }
    const leaseMs = o.leaseMs ?? Math.max(DEFAULT_TURN_LEASE_MS, leastLease);
    this.#turns = concurrencyLimiter({
      max: 1,
      store: queueStore,
      prefix: o.limiter.prefix,
      leaseMs,
      // The throttle bounds its own waiting calls (maxQueue), the turn's holder among them.
      maxKeyLength: DEFAULT_MAX_KEY_LENGTH + 16,
      clock: this.#clock,
    });
    this.#pauses = hasPauses(store)
      ? store.bindPause(o.limiter.prefix)
      : new MemoryPauses(this.#clock).bind(o.limiter.prefix);
    this.#stopHearing = this.#pauses.onPaused((key, ms) => this.#report({ type: 'paused', key, ms, origin: 'fleet' }));
  }

  #report(event: DistributiveOmit<ThrottleEvent, 'throttle'>): void {
    if (observed()) reportThrottle({ ...event, throttle: this.limiter.prefix } as ThrottleEvent);
  }

  #checkOpen(): void {
    if (this.#closing.signal.aborted) throw new SluiceError('CLOSED', 'the throttle is closed');
  }

  queued(key?: string): number {
    return this.#waiting.get(key ?? this.key) ?? 0;
  }

  async run<T>(fn: (ticket: ThrottleTicket) => T | Promise<T>, options?: ThrottleRunOptions): Promise<T> {
    let ticket: ThrottleTicket;
    try {
      this.#checkOpen();
      if (typeof fn !== 'function')
        throw new SluiceTypeError('fn', fn, `run needs the call to make as a function, got ${describe(fn)}`);
      knownOptions('run options', RUN_OPTIONS, options, false);
      const key = options?.key === undefined ? this.key : rateLimitKey(options.key, DEFAULT_MAX_KEY_LENGTH);
      const permits = permitsOption(options?.permits);
      checkPermitNames(permits, this.limiter.rules);
      const maxWaitMs =
        options?.maxWaitMs === undefined ? Infinity : nonNegativeOrInfinite('maxWaitMs', options.maxWaitMs);
      const signal = optionalSignal(options?.signal);
      const priority = priorityValue('priority', options?.priority);
      if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
      ticket = await this.#admit(key, permits, maxWaitMs, signal, priority, keepsPlace(options));
    } catch (error) {
      throw callerNamed('run', error);
    }
    // What fn throws is the caller's own: passed through untouched.
    return fn(ticket);
  }

  /** Waits for the call's turn, any pause and the rate; the ticket of the started call. */
  async #admit(
    key: string,
    permits: Permits,
    maxWaitMs: number,
    signal: AbortSignal | undefined,
    priority: number,
    placed: boolean,
  ): Promise<ThrottleTicket> {
    const startedAt = this.#clock.now();
    const deadline = startedAt + maxWaitMs;
    const queued = (this.#waiting.get(key) ?? 0) + 1;
    if (queued > this.#options.maxQueue) {
      this.#report({ type: 'left', key, reason: 'queue_full', waitedMs: 0, queued: queued - 1 });
      throw new SluiceError(
        'QUEUE_FULL',
        `${queued - 1} calls of ${JSON.stringify(key)} already wait to start (maxQueue ${this.#options.maxQueue})`,
      );
    }
    this.#waiting.set(key, queued);
    this.#report({ type: 'queued', key, queued });
    const own = new AbortController();
    const stop = own.signal;
    const onAbort = (): void => own.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#active.add(own);
    try {
      // A call sent again (throttle.fetch after a 429) waits ahead of the calls that came after it.
      const turnOptions: ConcurrencyAcquireOptions & KeepsPlace = {
        maxWaitMs,
        signal: stop,
        priority,
        [KEEPS_PLACE]: placed,
      };
      const turn = await this.#turns.acquire(turnKey(key), turnOptions).catch((error) => {
        throw this.#closed(error);
      });
      let granted: Granted;
      try {
        granted = await this.#whenAllowed(key, permits, deadline, stop);
      } finally {
        // The next call's turn starts as this one starts (or leaves): the turn orders starts, not calls. Not
        // awaited: the call starts a round trip sooner, and its start is not stamped after the next call's
        // (release never rejects; close waits for it).
        void turn.release();
      }
      const waitedMs = this.#clock.now() - startedAt;
      this.#left(key);
      this.#report({ type: 'started', key, waitedMs, queued: this.queued(key) });
      return new CallTicket(this.limiter, key, permits, granted.decision, waitedMs, granted.askedAt);
    } catch (error) {
      this.#left(key);
      const code = error instanceof SluiceError ? error.code : undefined;
      const reason = (code === undefined ? undefined : LEAVE_REASONS[code]) ?? 'failed';
      this.#report({ type: 'left', key, reason, waitedMs: this.#clock.now() - startedAt, queued: this.queued(key) });
      throw error;
    } finally {
      this.#active.delete(own);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** A closed throttle's rejections say CLOSED, whatever aborted the wait. */
  #closed(error: unknown): unknown {
    if (this.#closing.signal.aborted && error instanceof SluiceError && error.code === 'ABORTED')
      return new SluiceError('CLOSED', 'the throttle was closed while the call waited');
    return error;
  }

  #left(key: string): void {
    const left = (this.#waiting.get(key) ?? 1) - 1;
    if (left === 0) this.#waiting.delete(key);
    else this.#waiting.set(key, left);
  }

  /**
   * With the turn held: sleeps out any pause and each denial's retryAfterMs (what the store said, never a
   * poll) until the limiter grants `permits`. Only the turn's holder asks, so the calls behind it wait on
   * the queue, not on the limiter.
   */
  async #whenAllowed(key: string, permits: Permits, deadline: number, stop: AbortSignal): Promise<Granted> {
    for (;;) {
      const paused = await this.#pauses.pausedFor(key);
      if (paused > 0) {
        await this.#sleep(paused, deadline, stop, `${JSON.stringify(key)} is paused for ${Math.ceil(paused)} ms`);
        continue;
      }
      if (stop.aborted) throw this.#stopped(stop);
      const askedAt = this.#clock.now();
      const decision = await this.limiter.tryAcquire(key, { permits });
      if (decision.allowed) return { decision, askedAt };
      if (decision.blocked === true) {
        throw new SluiceError(
          'NEVER_ALLOWED',
          `${JSON.stringify(key)} is blocked for ${Math.ceil(decision.retryAfterMs)} ms more; a throttle does not ` +
            "wait out a ban (pause is the throttle's wait)",
        );
      }
      if (neverWhileAway(decision)) {
        // At most the time left, so a Redis back before the deadline is asked; none left is a WAIT_EXPIRED.
        await this.#sleep(
          Math.max(1, Math.min(FALLBACK_RETRY_MS, deadline - this.#clock.now())),
          deadline,
          stop,
          `the store's fail mode cannot grant the call's permits (rule ${JSON.stringify(decision.rule)}) until its Redis answers`,
        );
        continue;
      }
      if (!Number.isFinite(decision.retryAfterMs)) {
        throw new SluiceError(
          'NEVER_ALLOWED',
          `the call's permits can never be granted by rule ${JSON.stringify(decision.rule)} (limit ${decision.limit})`,
        );
      }
      await this.#sleep(
        Math.max(1, decision.retryAfterMs),
        deadline,
        stop,
        `rule ${JSON.stringify(decision.rule)} has room in ${Math.ceil(decision.retryAfterMs)} ms`,
      );
    }
  }

  /** Sleeps `ms`, or rejects at once when that would pass the deadline (waiting could not end in time). */
  async #sleep(ms: number, deadline: number, stop: AbortSignal, why: string): Promise<void> {
    if (this.#clock.now() + ms > deadline)
      throw new SluiceError('WAIT_EXPIRED', `the call cannot start within its maxWaitMs: ${why}`);
    try {
      await (this.#clock.sleep ? this.#clock.sleep(ms, stop) : timerSleep(ms, stop));
    } catch {
      throw this.#stopped(stop);
    }
  }

  #stopped(stop: AbortSignal): SluiceError {
    if (this.#closing.signal.aborted) return new SluiceError('CLOSED', 'the throttle was closed while the call waited');
    return new SluiceError('ABORTED', 'the call was aborted while it waited', { cause: stop.reason });
  }

  async pause(ms: number, key?: string): Promise<void> {
    try {
      this.#checkOpen();
      const duration = timerDuration('ms', ms);
      const target = key === undefined ? undefined : rateLimitKey(key, DEFAULT_MAX_KEY_LENGTH);
      await this.#pauses.pause(target, duration);
      this.#report({ type: 'paused', key: target, ms: duration, origin: 'here' });
    } catch (error) {
      throw callerNamed('pause', error);
    }
  }

  async pausedFor(key?: string): Promise<number> {
    try {
      this.#checkOpen();
      return await this.#pauses.pausedFor(key === undefined ? this.key : rateLimitKey(key, DEFAULT_MAX_KEY_LENGTH));
    } catch (error) {
      throw callerNamed('pausedFor', error);
    }
  }

  fetch(input: string | URL | Request, init?: ThrottleFetchInit): Promise<Response> {
    const o = this.#options;
    return throttledFetch(this, input, init, {
      fetch: o.fetch ?? globalThis.fetch.bind(globalThis),
      maxRetries: o.maxRetries,
      minPauseMs: o.minPauseMs,
      maxPauseMs: o.maxPauseMs,
      nowMs: () => Date.now(),
    });
  }

  async close(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    this.#closing.abort();
    for (const own of this.#active) own.abort();
    this.#stopHearing();
    await this.#turns.close();
    this.#pauses.unbind();
    await this.#ownStore?.close();
  }
}

/** Omit over each member of a union (the built-in Omit merges the union first). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function hasSemaphores(store: object): boolean {
  return typeof (store as Partial<ConcurrencyStore>).bindSemaphore === 'function';
}

/**
 * A throttle for the calls a service makes (an LLM provider's requests and tokens per minute, a partner's
 * quota): calls wait in one queue per key, in arrival order across every process sharing the limiter's
 * Redis store (higher priority first), start when the limiter grants their permits, and stop, everywhere,
 * for as long as a provider's 429 asks (`pause`, or `throttle.fetch` by itself). On the memory store, the
 * same in one process.
 *
 * @example
 * const llm = throttle({ limiter: createLimiter({ rules: [rpm, tpm], store }), key: 'openai' })
 * const answer = await llm.run(async (ticket) => {
 *   const reply = await callModel(prompt)
 *   await ticket.settle({ rpm: 1, tpm: reply.usage.total_tokens }) // the estimate was 1,200
 *   return reply
 * }, { permits: { rpm: 1, tpm: 1_200 }, maxWaitMs: 30_000 })
 */
export function throttle(options: ThrottleOptions): Throttle {
  return inCall('throttle', () => new FleetThrottle(options));
}
