/**
 * The rows one call touches, as the memory engine's data (EngineState): core's decideAsk, adjustKey, leaseOf
 * and heartbeatOf run on it unchanged, so answers are memoryEngine's bit for bit. The scratch's clock is the
 * database's time read once in the call's transaction: expiry follows the engine's clock, as ExpiringMap's
 * does. Afterwards, `changes` says which rows to write or delete.
 */
import { type Ban, type Fleet, memoryEngineParts as memory } from '@sluice/core/internal';
import { encode } from './codec.js';
import type { ExpiringTable } from './schema.js';

interface Kept<T> {
  value: T;
  /** When the entry expires for this call (ExpiringMap's expiry, on the database's clock). */
  expiresAt: number;
  /** When the row expires in the table: later by EXPIRY_GRACE_MS when this call set its expiry. */
  storedUntil: number;
}

/**
 * How much longer a row is kept than the expiry the call set (the docs allow later, never earlier): a caller's
 * times (`at`) and the database's clock move apart, and a call can take a while; a state that stops mattering
 * at the caller's time is then still there when its last caller asks, as memoryEngine's would be.
 */
export const EXPIRY_GRACE_MS = 1_000;

/** A row as loaded, or as the call left it. */
export interface Row {
  readonly key: string;
  /** codec.ts's text of the value. */
  readonly value: string;
  readonly expiresAt: number;
}

/**
 * ExpiringMap's semantics over the loaded rows, keeping each entry's expiry where a backend keeps it, and what
 * was loaded (to tell what changed). Values may change in place (a fleet's, a lessee set's): each loaded or
 * touched entry is compared by its encoded text, never by reference.
 */
export class ScratchMap<T> extends memory.ExpiringMap<T> {
  readonly #entries = new Map<string, Kept<T>>();
  readonly #loaded = new Map<string, Row>();
  readonly #now: () => number;

  constructor(clock: { now(): number }) {
    super(clock);
    this.#now = () => clock.now();
  }

  /** Puts a row read from the table (not yet expired) in. */
  load(key: string, value: T, text: string, expiresAt: number): void {
    this.#entries.set(key, { value, expiresAt, storedUntil: expiresAt });
    this.#loaded.set(key, { key, value: text, expiresAt });
  }

  override get(key: string): T | undefined {
    const kept = this.#entries.get(key);
    if (kept === undefined) return undefined;
    if (kept.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return kept.value;
  }

  override set(key: string, value: T, ttlMs?: number): void {
    const kept = this.#entries.get(key);
    if (ttlMs === undefined) {
      const expiresAt = kept?.expiresAt ?? Number.POSITIVE_INFINITY;
      this.#entries.set(key, { value, expiresAt, storedUntil: kept?.storedUntil ?? expiresAt });
      return;
    }
    const expiresAt = this.#now() + Math.max(0, ttlMs);
    this.#entries.set(key, { value, expiresAt, storedUntil: expiresAt + EXPIRY_GRACE_MS });
  }

  override expire(key: string, ttlMs: number): void {
    const kept = this.#entries.get(key);
    if (kept === undefined) return;
    kept.expiresAt = this.#now() + ttlMs;
    kept.storedUntil = kept.expiresAt + EXPIRY_GRACE_MS;
  }

  override delete(key: string): boolean {
    const kept = this.#entries.get(key);
    this.#entries.delete(key);
    return kept !== undefined && kept.expiresAt > this.#now();
  }

  /** What to write (upserts) and what to delete (keys), against what was loaded. */
  changes(): { readonly upserts: Row[]; readonly deletes: string[] } {
    const upserts: Row[] = [];
    const deletes: string[] = [];
    for (const [key, kept] of this.#entries) {
      const value = encode(kept.value);
      const before = this.#loaded.get(key);
      if (before === undefined || before.value !== value || before.expiresAt !== kept.storedUntil)
        upserts.push({ key, value, expiresAt: kept.storedUntil });
    }
    for (const key of this.#loaded.keys()) if (!this.#entries.has(key)) deletes.push(key);
    return { upserts, deletes };
  }
}

/** The memory engine's data over scratch maps; `now` is the database's time of the call. */
export class ScratchState extends memory.EngineState {
  override readonly states = new ScratchMap<unknown>(this.clock);
  override readonly bans = new ScratchMap<Ban>(this.clock);
  override readonly lessees = new ScratchMap<Map<string, number>>(this.clock);
  override readonly fleets = new ScratchMap<Fleet>(this.clock);

  constructor(readonly nowMs: number) {
    super({ now: () => nowMs });
  }

  table(name: ExpiringTable): ScratchMap<unknown> {
    return this[name] as ScratchMap<unknown>;
  }
}
