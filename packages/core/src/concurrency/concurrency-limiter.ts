import { type Clock, systemClock, timerSleep } from '../foundation/clock.js';
import { SluiceError, SluiceTypeError, callerNamed, inCall } from '../foundation/errors.js';
import { MemoryStore } from '../engine/memory-store.js';
import { CONCURRENCY_LIMITER_OPTIONS, type ConcurrencyLimiterOptions } from './concurrency-options.js';
import { type OptionNames, knownOptions, parseOptions } from '../foundation/options.js';
import {
  describe,
  nonNegativeOrInfinite,
  optionalSignal,
  priorityValue,
  rateLimitKey,
} from '../foundation/validate.js';
import type { ConcurrencyStore, SemaphoreBinding, SlotAttempt } from '../engine/semaphore-store.js';
import { placedPriority } from '../engine/semaphore-store.js';

export type { ConcurrencyLimiterOptions } from './concurrency-options.js';

/** Options of `acquire` and `run`: how long to wait for a slot, and what aborts the wait. */
export interface ConcurrencyAcquireOptions {
  /**
   * How long to wait for a slot; past it the call rejects with SluiceError('WAIT_EXPIRED'). 0 takes a slot only
   * if one is free now.
   * @default Infinity
   */
  maxWaitMs?: number;
  /** Aborting rejects a waiting call with SluiceError('ABORTED'). */
  signal?: AbortSignal;
  /**
   * Higher goes first: a caller waits behind every waiter of its priority or higher, here and (on Redis)
   * in every process; an integer from -1000 to 1000.
   * @default 0
   */
  priority?: number;
}

const ACQUIRE_OPTIONS: OptionNames<ConcurrencyAcquireOptions> = { maxWaitMs: true, signal: true, priority: true };

/** A held slot. */
export interface Slot {
  readonly key: string;
  /**
   * Aborted when the slot ends: released, or lost (its lease ran out on a shared store while this process
   * could not renew it, so another caller may be inside). Pass it to the work the slot guards.
   */
  readonly signal: AbortSignal;
  /** True once the store said this slot's lease had run out: another caller may hold the slot now. */
  readonly lost: boolean;
  /**
   * Gives the slot back; the next waiter, here or on another process, gets it. Releasing twice, or a slot
   * that was lost, does nothing (a lost slot's release never frees another caller's slot). Never rejects:
   * a slot a store could not be told of frees itself when its lease runs out.
   */
  release(): Promise<void>;
}

/** Caps how many callers are inside at once, per key: a bulkhead in one process, a semaphore across many. */
export interface ConcurrencyLimiter {
  /** Waits for a slot (by priority, then FIFO per key). Rejects with SluiceError 'WAIT_EXPIRED', 'ABORTED', 'QUEUE_FULL', 'CLOSED' or 'STORE_UNAVAILABLE'. */
  acquire(key: string, options?: ConcurrencyAcquireOptions): Promise<Slot>;
  /** A slot if one is free now (never ahead of callers already waiting), else undefined. */
  tryAcquire(key: string): Promise<Slot | undefined>;
  /** Holds a slot while `fn` runs and releases it however `fn` settles; rejects as acquire does, or with what `fn` threw. */
  run<T>(key: string, fn: (slot: Slot) => T | Promise<T>, options?: ConcurrencyAcquireOptions): Promise<T>;
  /** Rejects waiting callers with SluiceError('CLOSED'), releases the slots this process holds, stops renewing. */
  close(): Promise<void>;
  /** How many callers in this process wait for a slot of `key` now (a queue's depth, for metrics and tests). */
  waiting(key: string): number;
  readonly max: number;
  readonly prefix: string;
  readonly leaseMs: number;
}

interface Waiter {
  readonly key: string;
  readonly ticket: string;
  readonly priority: number;
  resolve(slot: Slot): void;
  reject(error: Error): void;
  /** Ends the waiter's own timers and listeners (a timeout, an abort). */
  readonly done: AbortController;
  settled: boolean;
}

class HeldSlot implements Slot {
  readonly #controller = new AbortController();
  #released = false;
  #lost = false;

  constructor(
    readonly key: string,
    readonly ticket: string,
    private readonly onRelease: (slot: HeldSlot) => Promise<void>,
  ) {}

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get lost(): boolean {
    return this.#lost;
  }

  get ended(): boolean {
    return this.#released || this.#lost;
  }

  /** The store said the lease ran out. */
  markLost(): void {
    if (this.ended) return;
    this.#lost = true;
    this.#controller.abort(
      new SluiceError(
        'CLOSED',
        `the slot for ${JSON.stringify(this.key)} was lost: its lease ran out before it could be renewed`,
      ),
    );
  }

  release(): Promise<void> {
    if (this.#released) return Promise.resolve();
    this.#released = true;
    if (!this.#lost) this.#controller.abort(new SluiceError('CLOSED', 'the slot was released'));
    return this.onRelease(this);
  }
}

const newTicket = (): string => globalThis.crypto.randomUUID();

class SemaphoreLimiter implements ConcurrencyLimiter {
  readonly max: number;
  readonly prefix: string;
  readonly leaseMs: number;
  readonly #binding: SemaphoreBinding;
  readonly #store: ConcurrencyStore;
  readonly #ownsStore: boolean;
  readonly #clock: Clock;
  readonly #maxQueue: number;
  readonly #maxKeyLength: number;
  /** Callers waiting per key, in the order they came. */
  readonly #waiting = new Map<string, Waiter[]>();
  /** Callers per key between their first attempt and a slot or a refusal: what maxQueue bounds. */
  readonly #pending = new Map<string, number>();
  /** Slots held here, by ticket. */
  readonly #held = new Map<string, HeldSlot>();
  /** Releases still on their way to the store: close waits for them before it unbinds. */
  readonly #releasing = new Set<Promise<void>>();
  /** Keys whose waiters are being tried now, and keys to try again when that ends. */
  readonly #waking = new Set<string>();
  readonly #wakeAgain = new Set<string>();
  /** When each key's next store-hinted wake-up is due. */
  readonly #retries = new Map<string, number>();
  readonly #closing = new AbortController();
  readonly #unsubscribe: () => void;
  /** Counts the store's "a slot may have come free" notices: one heard while a caller was being queued wakes it. */
  #freedNotices = 0;
  #renewing = false;
  #closed = false;

  constructor(options: ConcurrencyLimiterOptions) {
    const o = parseOptions('concurrencyLimiter options', CONCURRENCY_LIMITER_OPTIONS, options, true);
    this.max = o.max;
    this.leaseMs = o.leaseMs;
    const prefix = o.prefix;
    this.prefix = prefix;
    this.#maxQueue = o.maxQueue;
    this.#maxKeyLength = o.maxKeyLength;
    this.#clock = o.clock ?? systemClock;
    this.#store = o.store ?? new MemoryStore({ clock: this.#clock });
    this.#ownsStore = o.store === undefined;
    this.#binding = this.#store.bindSemaphore({ prefix, max: this.max, leaseMs: this.leaseMs });
    this.#unsubscribe = this.#binding.onFreed((key) => {
      this.#freedNotices++;
      void this.#wake(key);
    });
  }

  #checkOpen(): void {
    if (this.#closed) throw new SluiceError('CLOSED', 'the concurrency limiter is closed');
  }

  waiting(key: string): number {
    return this.#waiting.get(key)?.length ?? 0;
  }

  async acquire(key: string, options?: ConcurrencyAcquireOptions): Promise<Slot> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      knownOptions('acquire options', ACQUIRE_OPTIONS, options, false);
      const maxWaitMs =
        options?.maxWaitMs === undefined ? Infinity : nonNegativeOrInfinite('maxWaitMs', options.maxWaitMs);
      const signal = optionalSignal(options?.signal);
      const priority = placedPriority(priorityValue('priority', options?.priority), options);
      if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
      const pending = this.#pending.get(key) ?? 0;
      // A call that will not wait (maxWaitMs 0) is no waiter.
      if (pending >= this.#maxQueue && maxWaitMs > 0) {
        throw new SluiceError(
          'QUEUE_FULL',
          `${pending} callers already wait for ${JSON.stringify(key)} (maxQueue ${this.#maxQueue})`,
        );
      }
      this.#pending.set(key, pending + 1);
      try {
        return await this.#take(key, maxWaitMs, signal, priority);
      } finally {
        const left = (this.#pending.get(key) ?? 1) - 1;
        if (left === 0) this.#pending.delete(key);
        else this.#pending.set(key, left);
      }
    } catch (error) {
      throw callerNamed('acquire', error);
    }
  }

  async #take(key: string, maxWaitMs: number, signal: AbortSignal | undefined, priority: number): Promise<Slot> {
    const ticket = newTicket();
    const notices = this.#freedNotices;
    const startedAt = this.#clock.now();
    const attempt = await this.#binding.attempt(key, ticket, maxWaitMs > 0, priority);
    // Aborted while the first attempt was out (no listener was attached yet): the slot or the place it got
    // goes back at once, and the caller is told, never queued ahead of live waiters.
    if (signal?.aborted === true) {
      if (attempt.granted) await this.#releaseTicket(key, ticket);
      else void Promise.resolve(this.#binding.leave(key, ticket)).catch(() => {});
      throw new SluiceError('ABORTED', 'the wait for a slot was aborted', { cause: signal.reason });
    }
    if (attempt.granted) return this.#hold(key, ticket);
    if (attempt.refused === true)
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `no slot for ${JSON.stringify(key)}: the store is away and its fail mode refuses`,
      );
    if (maxWaitMs === 0)
      throw new SluiceError('WAIT_EXPIRED', `no slot for ${JSON.stringify(key)} was free (maxWaitMs 0)`);
    if (this.#closed) {
      void Promise.resolve(this.#binding.leave(key, ticket)).catch(() => {});
      throw new SluiceError('CLOSED', 'the concurrency limiter was closed while waiting');
    }
    // The timeout counts from the call, the first attempt included.
    const left = Math.max(1, maxWaitMs - (this.#clock.now() - startedAt));
    const slot = this.#wait(key, ticket, priority, left, signal, attempt.retryInMs);
    // A slot freed while this caller was being queued was told to nobody: try again now.
    if (this.#freedNotices !== notices) void this.#wake(key);
    return slot;
  }

  async tryAcquire(key: string): Promise<Slot | undefined> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const ticket = newTicket();
      const attempt = await this.#binding.attempt(key, ticket, false);
      return attempt.granted ? this.#hold(key, ticket) : undefined;
    } catch (error) {
      throw callerNamed('tryAcquire', error);
    }
  }

  async run<T>(key: string, fn: (slot: Slot) => T | Promise<T>, options?: ConcurrencyAcquireOptions): Promise<T> {
    let slot: Slot;
    try {
      if (typeof fn !== 'function')
        throw new SluiceTypeError('fn', fn, `run needs a function to run while holding the slot, got ${describe(fn)}`);
      slot = await this.acquire(key, options);
    } catch (error) {
      throw callerNamed('run', error);
    }
    // What fn throws is the caller's own: passed through untouched.
    try {
      return await fn(slot);
    } finally {
      await slot.release();
    }
  }

  /** Queues a caller that got no slot: it is tried again when a slot may have come free, until its timeout. */
  #wait(
    key: string,
    ticket: string,
    priority: number,
    maxWaitMs: number,
    signal: AbortSignal | undefined,
    retryInMs: number | undefined,
  ): Promise<Slot> {
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = { key, ticket, priority, resolve, reject, done: new AbortController(), settled: false };
      let queue = this.#waiting.get(key);
      if (queue === undefined) this.#waiting.set(key, (queue = []));
      // In the store's order: behind every waiter of its priority or higher.
      const behind = queue.findIndex((w) => w.priority < priority);
      queue.splice(behind === -1 ? queue.length : behind, 0, waiter);
      const giveUp = (error: SluiceError): void => this.#giveUp(waiter, error);
      if (maxWaitMs !== Infinity) {
        this.#sleep(maxWaitMs, waiter.done.signal).then(
          () =>
            giveUp(
              new SluiceError('WAIT_EXPIRED', `no slot for ${JSON.stringify(key)} came free within ${maxWaitMs} ms`),
            ),
          () => {},
        );
      }
      signal?.addEventListener(
        'abort',
        () => giveUp(new SluiceError('ABORTED', 'the wait for a slot was aborted', { cause: signal.reason })),
        {
          once: true,
          signal: waiter.done.signal,
        },
      );
      this.#retryAt(key, retryInMs);
      this.#renewWhileBusy();
    });
  }

  #giveUp(waiter: Waiter, error: Error): void {
    if (waiter.settled) return;
    waiter.settled = true;
    waiter.done.abort();
    this.#dequeue(waiter);
    // Its place in the store's queue goes too; a failure to say so ends with the place's own lease.
    Promise.resolve()
      .then(() => this.#binding.leave(waiter.key, waiter.ticket))
      .catch(() => {});
    waiter.reject(error);
  }

  #dequeue(waiter: Waiter): void {
    const queue = this.#waiting.get(waiter.key);
    if (queue === undefined) return;
    const i = queue.indexOf(waiter);
    if (i !== -1) queue.splice(i, 1);
    if (queue.length === 0) this.#waiting.delete(waiter.key);
  }

  /** Tries `key`'s waiters again, in order, until one gets no slot (those behind it would not either). */
  async #wake(key: string): Promise<void> {
    if (this.#waking.has(key)) {
      this.#wakeAgain.add(key);
      return;
    }
    this.#waking.add(key);
    let retryInMs: number | undefined;
    try {
      for (;;) {
        const waiter = this.#waiting.get(key)?.[0];
        if (waiter === undefined) break;
        let attempt: SlotAttempt;
        try {
          attempt = await this.#binding.attempt(key, waiter.ticket, true, waiter.priority);
        } catch {
          break;
        }
        if (!attempt.granted) {
          retryInMs = attempt.retryInMs;
          break;
        }
        this.#dequeue(waiter);
        if (waiter.settled) {
          // It timed out while its slot was on the way: give the slot straight back.
          void this.#releaseTicket(key, waiter.ticket);
          continue;
        }
        waiter.settled = true;
        waiter.done.abort();
        waiter.resolve(this.#hold(key, waiter.ticket));
      }
    } finally {
      this.#waking.delete(key);
    }
    if (this.#wakeAgain.delete(key)) return this.#wake(key);
    this.#retryAt(key, retryInMs);
  }

  /**
   * A wake-up when the store said a slot may come free unannounced (a crashed holder's lease running out).
   * One per key at a time: a wake-up already due sooner makes another unneeded.
   */
  #retryAt(key: string, retryInMs: number | undefined): void {
    if (retryInMs === undefined || this.#closed) return;
    const ms = Math.max(1, retryInMs);
    const due = this.#clock.now() + ms;
    const pending = this.#retries.get(key);
    if (pending !== undefined && pending <= due) return;
    this.#retries.set(key, due);
    this.#sleep(ms, this.#closing.signal).then(
      () => {
        if (this.#retries.get(key) === due) this.#retries.delete(key);
        void this.#wake(key);
      },
      () => {},
    );
  }

  #hold(key: string, ticket: string): Slot {
    const slot = new HeldSlot(key, ticket, (s) => this.#release(s));
    if (this.#closed) {
      // Granted as the limiter closed: nobody will use it.
      void slot.release();
      throw new SluiceError('CLOSED', 'the concurrency limiter was closed while waiting');
    }
    this.#held.set(ticket, slot);
    this.#renewWhileBusy();
    return slot;
  }

  async #release(slot: HeldSlot): Promise<void> {
    this.#held.delete(slot.ticket);
    const released = this.#releaseTicket(slot.key, slot.ticket);
    this.#releasing.add(released);
    try {
      await released;
    } finally {
      this.#releasing.delete(released);
    }
  }

  async #releaseTicket(key: string, ticket: string): Promise<void> {
    try {
      await this.#binding.release(key, ticket);
    } catch {
      // The store could not be told: the slot frees itself when its lease runs out (it is no longer renewed).
    }
  }

  /**
   * Renews every held slot and queued ticket every leaseMs / 3 while there are any: one store call per
   * key. A slot whose lease had already run out is lost (its signal aborts).
   */
  #renewWhileBusy(): void {
    if (this.#renewing || this.#closed) return;
    this.#renewing = true;
    const every = this.leaseMs / 3;
    const loop = async (): Promise<void> => {
      while (!this.#closed && (this.#held.size > 0 || this.#waiting.size > 0)) {
        try {
          await this.#sleep(every, this.#closing.signal);
        } catch {
          break;
        }
        await this.#renewAll();
      }
      this.#renewing = false;
    };
    void loop();
  }

  async #renewAll(): Promise<void> {
    const byKey = new Map<string, { held: string[]; waiting: string[] }>();
    const of = (key: string) => {
      let entry = byKey.get(key);
      if (entry === undefined) byKey.set(key, (entry = { held: [], waiting: [] }));
      return entry;
    };
    for (const slot of this.#held.values()) of(slot.key).held.push(slot.ticket);
    for (const [key, queue] of this.#waiting) for (const w of queue) of(key).waiting.push(w.ticket);
    await Promise.all(
      [...byKey].map(async ([key, { held, waiting }]) => {
        try {
          for (const ticket of await this.#binding.renew(key, held, waiting)) {
            const slot = this.#held.get(ticket);
            this.#held.delete(ticket);
            slot?.markLost();
          }
        } catch {
          // Not renewed this time (the store is failing): the slots stay held; the next renewal tells.
        }
      }),
    );
  }

  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    return this.#clock.sleep ? this.#clock.sleep(ms, signal) : timerSleep(ms, signal);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#unsubscribe();
    for (const queue of [...this.#waiting.values()]) {
      for (const waiter of [...queue])
        this.#giveUp(waiter, new SluiceError('CLOSED', 'the concurrency limiter was closed while waiting'));
    }
    await Promise.all([...this.#held.values()].map((slot) => slot.release()));
    await Promise.all(this.#releasing);
    await this.#binding.unbind();
    if (this.#ownsStore) await this.#store.close();
  }
}

/**
 * Creates a concurrency limiter: at most `max` callers inside at once per key, the others waiting first
 * come, first served. In this process by default; on Redis (`store: redisStore({ redis })`) across every
 * process, where a crashed holder's slot frees itself after `leaseMs`.
 *
 * @example
 * const llm = concurrencyLimiter({ max: 4 })
 * const answer = await llm.run(`tenant:${id}`, (slot) => callModel(prompt, { signal: slot.signal }), { maxWaitMs: 10_000 })
 */
export function concurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  return inCall('concurrencyLimiter', () => {
    return new SemaphoreLimiter(options);
  });
}
