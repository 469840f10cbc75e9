import { type BoardRow, type LimitedKeysBinding, MAX_BOARD_MINUTES, sumRows } from './limited-keys-board.js';

/** One minute's counts on a board, by key. */
type Minute = Map<string, { key: string; denied: number; nearLimit: number; error: number }>;

/**
 * Limited-keys boards kept in this process (the memory store's): the limiters of one prefix share one, and
 * each minute keeps the `keep` keys denied most, near the limit most and overcounted most, as Redis does.
 * Minutes older than MAX_BOARD_MINUTES + 1 before the newest added are dropped.
 * @example
 * const board = new MemoryBoards().bind('api')
 * await board.add(29_000_000, [{ key: 'user:1', denied: 3, nearLimit: 0, error: 0 }], 256)
 */
export class MemoryBoards {
  readonly #boards = new Map<string, Map<number, Minute>>();

  bind(prefix: string): LimitedKeysBinding {
    const boards = this.#boards;
    const minutes = (): Map<number, Minute> => {
      let board = boards.get(prefix);
      if (board === undefined) boards.set(prefix, (board = new Map()));
      return board;
    };
    return {
      add: async (minute, rows, keep) => {
        const board = minutes();
        let counts = board.get(minute);
        if (counts === undefined) {
          board.set(minute, (counts = new Map()));
          for (const old of board.keys()) if (old < minute - MAX_BOARD_MINUTES) board.delete(old);
        }
        for (const row of sumRows([[...counts.values()], rows])) if (countsSomething(row)) counts.set(row.key, row);
        if (counts.size > keep) board.set(minute, trimmed(counts, keep));
      },
      read: async (from, to) => {
        const board = boards.get(prefix);
        if (board === undefined) return [];
        const lists: BoardRow[][] = [];
        for (const [minute, counts] of board) if (minute >= from && minute <= to) lists.push([...counts.values()]);
        return sumRows(lists);
      },
      unbind: () => {},
    };
  }
}

/**
 * `counts` with each count kept only for the `keep` keys highest in it, as the Redis board trims each of its
 * sorted sets apart (a key can keep its near-limit count and lose its denials; of equal counts the key last in
 * byte order stays, as a sorted set's rank says); a key with no count left goes.
 */
function trimmed(counts: Minute, keep: number): Minute {
  const rows = [...counts.values()].map((row) => ({ ...row }));
  for (const field of ['denied', 'nearLimit', 'error'] as const) {
    const held = rows
      .filter((row) => row[field] > 0)
      .sort((a, b) => b[field] - a[field] || (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
    for (const row of held.slice(keep)) row[field] = 0;
  }
  const out: Minute = new Map();
  for (const row of rows) if (countsSomething(row)) out.set(row.key, row);
  return out;
}

/** A row that counts nothing is not on a board (Redis keeps no key without a score above 0). */
function countsSomething(row: BoardRow): boolean {
  return row.denied > 0 || row.nearLimit > 0 || row.error > 0;
}
