/**
 * The seam between a concurrency limiter and where its slots are counted: in this process (the memory
 * store) or on Redis (redisStore), where the holders of every process meet. The limiter keeps the callers
 * (their FIFO order here, their timeouts and signals, the lease renewals); the store keeps the count.
 */

/**
 * An acquire option for sluice's own callers, never a user's: the caller had a slot of this key before and is
 * back for another (a throttled call a provider refused, sent again), so it waits at the head of its priority,
 * ahead of every waiter of that priority, as it did when it first waited. Its place is a half step above the
 * priority (p + 0.5): between the waiters of p + 1 and those of p, in the limiter and in the store's queue.
 */
export const KEEPS_PLACE: unique symbol = Symbol('sluice.keepsPlace');

/** Acquire options that may carry the internal KEEPS_PLACE flag. */
export interface KeepsPlace {
  readonly [KEEPS_PLACE]?: boolean;
}

/** Whether acquire options carry KEEPS_PLACE. */
export function keepsPlace(options: object | undefined): boolean {
  return (options as KeepsPlace | undefined)?.[KEEPS_PLACE] === true;
}

/** The place `priority` asks for: half a step above it for a caller that keeps its place (see KEEPS_PLACE). */
export function placedPriority(priority: number, options: object | undefined): number {
  return keepsPlace(options) ? priority + 0.5 : priority;
}

/** What a concurrency limiter hands its store. */
export interface SemaphoreSpec {
  /** Namespace of the limiter's keys in the store. */
  readonly prefix: string;
  /** Slots per key. */
  readonly max: number;
  /**
   * How long a holder keeps its slot without renewing (a holder that crashed holds it no longer); the
   * limiter renews every held slot and every queued ticket well within it.
   */
  readonly leaseMs: number;
}

/** The answer to one attempt at a slot. */
export type SlotAttempt =
  | {
      readonly granted: true;
      /** 'store': counted by the store; 'fallback': decided by the store's fail mode while it is away. */
      readonly source: 'store' | 'fallback';
    }
  | {
      readonly granted: false;
      /**
       * When a slot may come free with no release heard of it (a crashed holder's lease running out), in ms
       * from now; undefined when only a release will free one. A waiter tries again then.
       */
      readonly retryInMs: number | undefined;
      /** True when the store is away and its fail mode refuses ('closed'): waiting would not help. */
      readonly refused?: boolean;
    };

/** One concurrency limiter's slots in a store. Tickets are unique per acquire. */
export interface SemaphoreBinding {
  /**
   * Tries to take a slot for `ticket`. With `queue`, a ticket that does not get one keeps its place in the
   * store's queue for the key (higher `priority` first, then first come, first served across processes)
   * until it gets one or leaves; a try without `queue` never passes a queued ticket of its priority or
   * higher. `priority` is an integer from -1000 to 1000 (0 when not given), or half a step above one for a
   * caller back for another slot (a throttled call sent again): behind the waiters of p + 1, ahead of p's.
   */
  attempt(key: string, ticket: string, queue: boolean, priority?: number): SlotAttempt | Promise<SlotAttempt>;
  /** Gives a slot back; waiters of the key anywhere are told. Resolves false when the ticket held none (its lease had run out). */
  release(key: string, ticket: string): boolean | Promise<boolean>;
  /** A queued ticket gives up its place (a timeout, an abort). */
  leave(key: string, ticket: string): void | Promise<void>;
  /**
   * Extends the leases of `held` and the queue places of `waiting`; resolves to the held tickets whose
   * lease had already run out (another holder may have the slot).
   */
  renew(
    key: string,
    held: readonly string[],
    waiting: readonly string[],
  ): readonly string[] | Promise<readonly string[]>;
  /** Calls `listener(key)` whenever a slot may have come free for a key of this binding; returns the unsubscribe. */
  onFreed(listener: (key: string) => void): () => void;
  /** The limiter closed: drop what the store holds for it. */
  unbind(): void | Promise<void>;
}

/** A store that can count concurrency slots (the memory store, redisStore). */
export interface ConcurrencyStore {
  /** Binds a concurrency limiter's semaphore (its max, lease and prefix). */
  bindSemaphore(spec: SemaphoreSpec): SemaphoreBinding;
  /** Releases what the store holds. */
  close(): Promise<void>;
}
