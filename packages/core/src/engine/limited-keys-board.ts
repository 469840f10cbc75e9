/**
 * The seam between a limiter's limited-keys sketches and where a fleet's counts meet: in this process (the
 * memory store) or on Redis (redisStore, leasedStore, dividedStore), where every node's counts add up so
 * `topLimited` answers for the fleet. Each node adds what it counted since its last flush, as the counts of
 * the minute it flushes in; a reader sums the minutes it asks for. What a board keeps is bounded per minute
 * (the `keep` most of each count) and expires.
 */

/** One key's counts as a board keeps them: denials, near-limit grants, and the sketches' possible overcount. */
export interface BoardRow {
  readonly key: string;
  readonly denied: number;
  readonly nearLimit: number;
  readonly error: number;
}

/** The most minutes a board is read over (and how long it keeps a minute, with one more). */
export const MAX_BOARD_MINUTES = 15;

/** One limiter's board in a store (its prefix's: limiters of one prefix share it, as a fleet does). */
export interface LimitedKeysBinding {
  /**
   * Adds one node's counts to those of `minute` (ms since the epoch / 60,000); the minute keeps the `keep`
   * keys denied most, near the limit most, and overcounted most.
   */
  add(minute: number, rows: readonly BoardRow[], keep: number): Promise<void>;
  /** Every node's counts summed over minutes `from` to `to` (both included), by key, in no order. */
  read(from: number, to: number): Promise<BoardRow[]>;
  /** The limiter closed: drop what the store holds for it. */
  unbind(): void;
}

/** A store that keeps limited-keys boards. */
export interface LimitedKeysStore {
  /** Binds the board of the limiter whose namespace is `prefix`. */
  bindLimitedKeys(prefix: string): LimitedKeysBinding;
}

/**
 * True for a store that keeps limited-keys boards.
 * @example
 * const board = hasLimitedKeysBoard(store) ? store.bindLimitedKeys(prefix) : new MemoryBoards().bind(prefix)
 */
export function hasLimitedKeysBoard(store: object): store is LimitedKeysStore {
  return typeof (store as Partial<LimitedKeysStore>).bindLimitedKeys === 'function';
}

/**
 * `lists` summed by key: each row's counts added to its key's.
 * @example
 * sumRows([[{ key: 'a', denied: 1, nearLimit: 0, error: 0 }], [{ key: 'a', denied: 2, nearLimit: 1, error: 0 }]])
 * // [{ key: 'a', denied: 3, nearLimit: 1, error: 0 }]
 */
export function sumRows(lists: ReadonlyArray<readonly BoardRow[]>): BoardRow[] {
  const byKey = new Map<string, { key: string; denied: number; nearLimit: number; error: number }>();
  for (const rows of lists) {
    for (const row of rows) {
      const sum = byKey.get(row.key);
      if (sum === undefined) byKey.set(row.key, { ...row });
      else {
        sum.denied += row.denied;
        sum.nearLimit += row.nearLimit;
        sum.error += row.error;
      }
    }
  }
  return [...byKey.values()];
}

/**
 * Rows most denied first, then most near the limit, then by key (a stable order).
 * @example
 * byMostLimited(rows).slice(0, 10)
 */
export function byMostLimited<R extends BoardRow>(rows: R[]): R[] {
  return rows.sort(
    (a, b) => b.denied - a.denied || b.nearLimit - a.nearLimit || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
}
