/**
 * The seam between a throttle (outgoing calls) and where its pauses live: in this process (the memory store)
 * or on Redis (redisStore), where a pause one node sets holds every node. A pause is a stretch of time in
 * which no call of a throttle's key starts (a provider answered 429: the whole fleet stops, not one node).
 */

/** One throttle's pauses in a store, by key; `undefined` as a key pauses every key of the throttle. */
export interface PauseBinding {
  /**
   * No call of `key` (undefined: of any key) starts for `ms` from now. A longer pause already in force is
   * kept: a pause is only ever extended.
   */
  pause(key: string | undefined, ms: number): void | Promise<void>;
  /** How long calls of `key` stay paused, by its own pause or the throttle-wide one; 0 when they are not. */
  pausedFor(key: string): number | Promise<number>;
  /**
   * Calls `listener` when a pause is set through another binding of the prefix (another throttle here, or
   * on a shared store another node); returns the unsubscribe. A listener learns of pauses, never polls.
   */
  onPaused(listener: (key: string | undefined, ms: number) => void): () => void;
  /** The throttle closed: drop what the store holds for it. */
  unbind(): void;
}

/** A store that keeps throttles' pauses (the memory store, redisStore). */
export interface PauseStore {
  /** Binds the pauses of the throttle whose namespace is `prefix`. */
  bindPause(prefix: string): PauseBinding;
}

/**
 * True for a store that keeps pauses.
 * @example
 * const pauses = hasPauses(store) ? store.bindPause(prefix) : new MemoryPauses(clock).bind(prefix)
 */
export function hasPauses(store: object): store is PauseStore {
  return typeof (store as Partial<PauseStore>).bindPause === 'function';
}
