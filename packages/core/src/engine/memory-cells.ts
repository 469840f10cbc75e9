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

  /** Stores `state` for `key`, reusing the key's cell when it has one. */
  store(cells: Namespace<Cell>, key: string, cell: Cell | undefined, state: unknown, now: number, ttlMs: number): void {
    // A millisecond past the rounded-up end: rounding can never make a state look done before it is.
    const expiresAt = Math.ceil(now - this.origin + ttlMs) + 1;
    if (cell === undefined) cells.set(key, { state, expiresAt });
    else {
      cell.state = state;
      cell.expiresAt = expiresAt;
    }
  }

  /**
   * Keeps a refunded state: a refund never makes a state matter longer, so the cell keeps its expiry; one
   * that decides as a fresh one would is dropped.
   */
  refunded(cells: Namespace<Cell>, key: string, cell: Cell, state: unknown): void {
    if (state === undefined) cells.delete(key);
    else cell.state = state;
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

/** A grant time `grantedAgoMs` before `now` (NaN stays NaN: unknown). */
export const grantedAt = (now: number, grantedAgoMs: number): number => now - grantedAgoMs;

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
