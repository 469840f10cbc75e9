/**
 * How the memory store keeps a key's state: the cell that holds it and when it stops mattering, the
 * expiry arithmetic on the store's clock, the sweep that drops what expired, and bans held apart.
 */
import type { Adjusted } from '../algorithms/algorithm.js';
import { type Ban, longerBan } from './ban.js';
import type { Clock } from '../foundation/clock.js';
import type { Decision } from '../foundation/decision.js';
import type { KeyGenerations, Namespace } from './key-generations.js';

/**
 * One key's state and when it stops mattering. A grant updates the cell in place, so a decision costs
 * one cache lookup; expiry is judged against the decision's own clock reading, so it can never disagree
 * with the decision (no second clock, no timers).
 */
export interface Cell {
  state: unknown;
  /**
   * When prune() may drop the state: whole milliseconds since the store's origin, rounded up plus one, a
   * small integer that V8 keeps unboxed for the first 12 days of a store's life (a double costs a 16-byte
   * box per key). It never decides a request: a state past its time decides as a fresh one would.
   */
  expiresAt: number;
}

/** Drops every cell expired at `sinceOrigin` (ms since the store's origin), in every namespace. */
export function dropExpired(states: KeyGenerations, sinceOrigin: number): void {
  for (const space of states.namespaces() as IterableIterator<Namespace<Cell>>) {
    const expired: string[] = [];
    for (const [key, cell] of space.entries()) if (cell.expiresAt <= sinceOrigin) expired.push(key);
    for (const key of expired) space.delete(key);
  }
}

/** Drops every ban ended at `now`, in every namespace. */
export function dropEnded(bans: KeyGenerations, now: number): void {
  for (const space of bans.namespaces() as IterableIterator<Namespace<Ban>>) {
    const ended: string[] = [];
    for (const [key, ban] of space.entries()) if (ban.until <= now) ended.push(key);
    for (const key of ended) space.delete(key);
  }
}

/** What a binding is given by its store: its namespace's cells and bans, the store's time, its unbinding. */
export interface BindingParts {
  readonly cells: Namespace<Cell>;
  readonly bans: Bans;
  readonly time: StoreTime;
  readonly unbind: () => void;
}

/** The store's clock, and the cell expiry arithmetic relative to its origin. */
export class StoreTime {
  constructor(
    readonly clock: Clock,
    private readonly origin: number,
  ) {}

  /** Stores `state` for `key`, reusing the key's cell, and the record it holds (see StateKeeper), when it has them. */
  store(
    cells: Namespace<Cell>,
    key: string,
    cell: Cell | undefined,
    state: unknown,
    now: number,
    ttlMs: number,
    keeper: StateKeeper,
  ): void {
    // A millisecond past the rounded-up end: rounding can never make a state look done before it is.
    const expiresAt = Math.ceil(now - this.origin + ttlMs) + 1;
    if (cell === undefined) cells.set(key, { state: keeper.own(state), expiresAt });
    else {
      if (!keeper.over(cell.state, state)) cell.state = keeper.own(state);
      cell.expiresAt = expiresAt;
    }
  }

  /**
   * Keeps a refunded state: a refund never makes a state matter longer, so the cell keeps its expiry; one
   * that decides as a fresh one would is dropped.
   */
  refunded(cells: Namespace<Cell>, key: string, cell: Cell, state: unknown, keeper: StateKeeper): void {
    if (state === undefined) cells.delete(key);
    else if (!keeper.over(cell.state, state)) cell.state = keeper.own(state);
  }
}

/**
 * How a binding keeps its rules' states in cells. Why: a rule returns a new state on every grant; stored as
 * it is, that young object is held by an old cell until the key's next decision, so every young-generation
 * collection copies the states of the keys asked since the last one (most of them, over a few thousand
 * keys), promotes those that survive twice, and the old generation fills with dead states (at 10,000 keys
 * and 128 decisions in flight, a scavenge kept 526 KB of 16 MB and paused 2 to 5 ms; RateLimiterMemory's,
 * whose records hold numbers, kept 170 KB). Written over the store's own record instead, the rule's new
 * state dies young, where collecting it costs nothing.
 *
 * The record written over is always the store's own copy, made when a state is first stored: never one a
 * rule or a caller still holds (take() hands a cell's state out as it deletes the cell).
 */
export interface StateKeeper {
  /** What a cell keeps of a state: the store's own copy of a record it can write over later, else the state as is. */
  own(state: unknown): unknown;
  /** Writes `next` over `kept` when `kept` is the store's record and `next` has its fields; false otherwise. */
  over(kept: unknown, next: unknown): boolean;
}

const { getOwnPropertyNames, getOwnPropertySymbols, getPrototypeOf, keys } = Object;

/**
 * One rule's states. A state is plain data (see Algorithm): a built-in rule's is a record of one to three
 * numbers, always the same fields, which this learns from the first state it keeps; its own enumerable
 * string-keyed fields are all of it. A record of other fields is stored as a new copy; one that is not a
 * plain record (a custom rule's class instance, a number) is kept as it is, as before.
 */
export class RecordKeeper implements StateKeeper {
  /** undefined: not learned yet; null: the rule's states are not records this can write over. */
  #shape: RecordShape | null | undefined;

  own(state: unknown): unknown {
    if (this.#shape === undefined) this.#shape = shapeOf(state);
    // Every plain record is copied, whatever its fields: a record in a cell is then always the store's own.
    if (!isPlainRecord(state)) return state;
    const shape = this.#shape;
    return shape?.fits(state) ? shape.copy(state) : { ...state };
  }

  over(kept: unknown, next: unknown): boolean {
    const shape = this.#shape;
    if (!shape?.fits(next) || !shape.fits(kept)) return false;
    shape.write(kept, next);
    return true;
  }
}

type Fields = Record<string, unknown>;

/** Records of exactly some fields: whether a state is one, and a copy of one's fields over another's. */
interface RecordShape {
  fits(state: unknown): state is Fields;
  write(kept: Fields, next: Fields): void;
  /**
   * A new record of the state's fields, built field by field. Not a spread: a spread's copy holds its
   * numbers as a generic field would, so each write over it stored a new young number by reference (one
   * per key surviving every scavenge at epoch-scale times); a record built by stores keeps a double field
   * whose number is written in place.
   */
  copy(state: Fields): Fields;
}

function isPlainRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && getPrototypeOf(value) === Object.prototype;
}

/** How many fields a record has (its own enumerable ones: its prototype, Object.prototype, has none). */
function fieldCount(state: Fields): number {
  let count = 0;
  for (const _ in state) count++;
  return count;
}

/**
 * The shape of a state this can write over: a plain record's own enumerable string-keyed fields, and
 * nothing else. Each field is read and written under one name per site, as `kept.tokens = next.tokens`
 * would be (a loop over the names would make every site see them all, several times slower); `in` is own
 * here, as no field is one of Object.prototype's names.
 */
function shapeOf(state: unknown): RecordShape | null {
  if (!isPlainRecord(state)) return null;
  const fields = keys(state);
  const plain =
    fields.length > 0 &&
    getOwnPropertyNames(state).length === fields.length &&
    getOwnPropertySymbols(state).length === 0 &&
    fields.every((name) => !(name in Object.prototype));
  if (!plain) return null;
  const [a, b, c] = fields as [string, string, string];
  switch (fields.length) {
    case 1:
      return {
        fits: (s): s is Fields => isPlainRecord(s) && fieldCount(s) === 1 && a in s,
        write: (kept, next) => {
          kept[a] = next[a];
        },
        copy: (state) => {
          const kept: Fields = {};
          kept[a] = state[a];
          return kept;
        },
      };
    case 2:
      return {
        fits: (s): s is Fields => isPlainRecord(s) && fieldCount(s) === 2 && a in s && b in s,
        write: (kept, next) => {
          kept[a] = next[a];
          kept[b] = next[b];
        },
        copy: (state) => {
          const kept: Fields = {};
          kept[a] = state[a];
          kept[b] = state[b];
          return kept;
        },
      };
    case 3:
      return {
        fits: (s): s is Fields => isPlainRecord(s) && fieldCount(s) === 3 && a in s && b in s && c in s,
        write: (kept, next) => {
          kept[a] = next[a];
          kept[b] = next[b];
          kept[c] = next[c];
        },
        copy: (state) => {
          const kept: Fields = {};
          kept[a] = state[a];
          kept[b] = state[b];
          kept[c] = state[c];
          return kept;
        },
      };
    default:
      return {
        fits: (s): s is Fields =>
          isPlainRecord(s) && fieldCount(s) === fields.length && fields.every((name) => name in s),
        write: (kept, next) => {
          for (const name of fields) kept[name] = next[name];
        },
        copy: (state) => {
          const kept: Fields = {};
          for (const name of fields) kept[name] = state[name];
          return kept;
        },
      };
  }
}

/** A policy's states: one list per key, one state per rule, each kept by its rule's keeper. */
export class ListKeeper implements StateKeeper {
  readonly #rules: readonly RecordKeeper[];

  constructor(rules: number) {
    this.#rules = Array.from({ length: rules }, () => new RecordKeeper());
  }

  /** The keeper of rule `r`'s states. */
  rule(r: number): RecordKeeper {
    return this.#rules[r] as RecordKeeper;
  }

  own(states: unknown): unknown {
    if (!Array.isArray(states)) return states;
    return states.map((state, r) => (r < this.#rules.length ? this.rule(r).own(state) : state));
  }

  over(kept: unknown, next: unknown): boolean {
    // A list in a cell is always the store's own (own() made it).
    if (
      !Array.isArray(kept) ||
      !Array.isArray(next) ||
      next.length !== kept.length ||
      next.length !== this.#rules.length
    )
      return false;
    for (let r = 0; r < next.length; r++) {
      const keeper = this.rule(r);
      if (!keeper.over(kept[r], next[r])) kept[r] = keeper.own(next[r]);
    }
    return true;
  }
}

/** A namespace's bans by key, held apart from states (see MemoryStoreOptions.maxKeys). */
export class Bans {
  constructor(private readonly cache: Namespace<Ban>) {}

  /** The ban in force on `key` at `now`; one that ended is dropped. */
  active(key: string, now: number): Ban | undefined {
    // No ban in the namespace (the common case): two field reads, not a lookup.
    if (this.cache.isEmpty) return undefined;
    const ban = this.cache.get(key);
    if (ban === undefined) return undefined;
    if (ban.until > now) return ban;
    this.cache.delete(key);
    return undefined;
  }

  /** Starts `ban` on `key`, or keeps the ban in force when it ends later. */
  start(key: string, ban: Ban, now: number): Ban {
    const kept = longerBan(this.active(key, now), ban);
    this.cache.set(key, kept);
    return kept;
  }

  delete(key: string): void {
    this.cache.delete(key);
  }
}

/** A grant time `grantedMsAgo` before `now` (NaN stays NaN: unknown). */
export const grantedAt = (now: number, grantedMsAgo: number): number => now - grantedMsAgo;

/** A peek's decision: it took nothing, so the permit it probed with is still there. */
export function withPeekedPermit(d: Decision): Decision {
  if (!d.allowed) return d;
  return {
    ...d,
    remaining: d.remaining + 1,
    ...(d.rules ? { rules: d.rules.map((r) => ({ ...r, remaining: r.remaining + 1 })) } : {}),
  };
}

/** The longest life among adjusted states: a policy's states are kept together. */
export function longestLife(adjusted: readonly Adjusted<unknown>[]): number {
  return Math.max(...adjusted.map((a) => a.ttlMs));
}
