import {
  type LimitedKeysBinding,
  type BoardRow,
  MAX_BOARD_MINUTES,
  OPERATIONS_DEADLINE_MS,
  sumRows,
  withDeadline,
} from '@sluice/core/internal';
import type { RedisConnection, ScriptReply } from './connection/connection.js';
import { limitedKeysKeys } from './key-layout.js';
import { numArg } from './exact/rule-args.js';
import type { StartupChecks } from './preflight.js';
import { limitedKeysScript } from './scripts.js';

/** A minute's sorted sets live this long: the longest read, and one more. */
const MINUTE_TTL_MS = (MAX_BOARD_MINUTES + 1) * 60_000;

/** What a Redis board needs from its store. */
export interface BoardContext {
  readonly connection: RedisConnection;
  readonly timeoutMs: number;
}

/**
 * A Redis store's limited-keys boards (redisStore, leasedStore, dividedStore: Store.bindLimitedKeys): binds
 * a limiter's, and keeps the store's startup check of the board's commands while any limiter of the prefix
 * is bound.
 * @example
 * const boards = new RedisBoards({ connection, timeoutMs: 500 }, checks)
 * const board = boards.bind('api')
 */
export class RedisBoards {
  readonly #ctx: BoardContext;
  readonly #checks: StartupChecks;
  /** How many limiters' boards are bound, by prefix. */
  readonly #bound = new Map<string, number>();

  constructor(ctx: BoardContext, checks: StartupChecks) {
    this.#ctx = ctx;
    this.#checks = checks;
  }

  /** The board of the limiter whose namespace is `prefix` (its startup check added with the first). */
  bind(prefix: string): LimitedKeysBinding {
    const bound = this.#bound.get(prefix) ?? 0;
    const check = `${prefix} limited keys`;
    if (bound === 0) this.#checks.add(prefix, [limitedKeysScript()], check);
    this.#bound.set(prefix, bound + 1);
    let unbound = false;
    return new RedisBoard(this.#ctx, prefix, () => {
      if (unbound) return;
      unbound = true;
      const left = (this.#bound.get(prefix) ?? 1) - 1;
      if (left > 0) this.#bound.set(prefix, left);
      else {
        this.#bound.delete(prefix);
        this.#checks.remove(check);
      }
    });
  }
}

/**
 * A limiter's limited-keys board on Redis (limited_keys.lua): one call per flush adds a node's counts to
 * its minute's sorted sets (trimmed to `keep` each, expiring), one call reads the minutes asked for. What it
 * costs Redis follows the nodes that flush (each at most once per flushMs, with at most 2 x capacity keys),
 * never the number of keys limited. Reads and adds fail with the connection's error (the limiter keeps the
 * counts for its next flush).
 * @example
 * const board = new RedisBoard({ connection, timeoutMs: 500 }, 'api')
 * await board.add(29_000_000, [{ key: 'user:1', denied: 3, nearLimit: 0, error: 0 }], 256)
 */
export class RedisBoard implements LimitedKeysBinding {
  readonly #ctx: BoardContext;
  readonly #prefix: string;
  readonly #unbind: () => void;

  constructor(ctx: BoardContext, prefix: string, unbind: () => void = () => {}) {
    this.#ctx = ctx;
    this.#prefix = prefix;
    this.#unbind = unbind;
  }

  async add(minute: number, rows: readonly BoardRow[], keep: number): Promise<void> {
    const args = ['add', String(keep), String(MINUTE_TTL_MS)];
    for (const row of rows) args.push(row.key, numArg(row.denied), numArg(row.nearLimit), numArg(row.error));
    await withDeadline(
      this.#ctx.connection.runScript(limitedKeysScript(), limitedKeysKeys(this.#prefix, minute), args),
      Math.max(this.#ctx.timeoutMs, OPERATIONS_DEADLINE_MS),
      'a limited-keys flush',
    );
  }

  async read(from: number, to: number): Promise<BoardRow[]> {
    const keys: string[] = [];
    for (let minute = from; minute <= to; minute++) keys.push(...limitedKeysKeys(this.#prefix, minute));
    const reply = await withDeadline(
      this.#ctx.connection.runScript(limitedKeysScript(), keys, ['read']),
      Math.max(this.#ctx.timeoutMs, OPERATIONS_DEADLINE_MS),
      'a limited-keys read',
    );
    return sumRows(minutesOf(reply));
  }

  unbind(): void {
    this.#unbind();
  }
}

const FIELDS = ['denied', 'nearLimit', 'error'] as const;

/** The read's reply (three ZRANGE WITHSCORES per minute) as one list of rows per minute. */
function minutesOf(reply: ScriptReply): BoardRow[][] {
  const sets = Array.isArray(reply) ? reply : [];
  const minutes: BoardRow[][] = [];
  for (let m = 0; m + 2 < sets.length; m += 3) {
    const rows = new Map<string, { key: string; denied: number; nearLimit: number; error: number }>();
    FIELDS.forEach((field, j) => {
      const set = sets[m + j];
      if (!Array.isArray(set)) return;
      for (let i = 0; i + 1 < set.length; i += 2) {
        const key = String(set[i]);
        const row = rows.get(key) ?? { key, denied: 0, nearLimit: 0, error: 0 };
        row[field] = Number(String(set[i + 1]));
        rows.set(key, row);
      }
    });
    minutes.push([...rows.values()]);
  }
  return minutes;
}
