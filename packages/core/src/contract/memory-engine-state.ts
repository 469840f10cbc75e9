/**
 * What the memory engine keeps, by prefix: the rules' states by (prefix, state name, identity), bans by
 * (prefix, key), the highest configuration version named, lessees, fleets and configuration records. States,
 * lessees and fleets expire on the engine's own clock as a backend's keys do (a caller's `at` never
 * decides when memory is given back); bans end at their time on the decision's clock, as core's do.
 */
import { type Ban, longerBan } from '../engine/ban.js';
import type { Clock } from '../foundation/clock.js';
import type { ConfigRecord } from './engine.js';
import type { Fleet } from './memory-fleet.js';

interface Kept<T> {
  value: T;
  /** On the engine's clock (Infinity: never). */
  expiresAt: number;
}

/** Writes between two sweeps of what expired: memory stays bounded by what is live, at no cost per call. */
const SWEEP_EVERY = 4_096;

/** A map whose entries expire on the engine's clock, swept now and then. */
export class ExpiringMap<T> {
  readonly #entries = new Map<string, Kept<T>>();
  #writes = 0;

  constructor(private readonly clock: Clock) {}

  get(key: string): T | undefined {
    const kept = this.#entries.get(key);
    if (kept === undefined) return undefined;
    if (kept.expiresAt <= this.clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return kept.value;
  }

  /** Keeps `value` for `ttlMs` from the engine's now (undefined: keeps the entry's expiry, or never). */
  set(key: string, value: T, ttlMs?: number): void {
    const kept = this.#entries.get(key);
    const expiresAt =
      ttlMs === undefined ? (kept?.expiresAt ?? Number.POSITIVE_INFINITY) : this.clock.now() + Math.max(0, ttlMs);
    this.#entries.set(key, { value, expiresAt });
    if (++this.#writes % SWEEP_EVERY === 0) this.#sweep();
  }

  /** Sets how long the entry lives from the engine's now. */
  expire(key: string, ttlMs: number): void {
    const kept = this.#entries.get(key);
    if (kept !== undefined) kept.expiresAt = this.clock.now() + ttlMs;
  }

  /** Forgets `key`; true when it held something not yet expired (a backend's DEL of a live key). */
  delete(key: string): boolean {
    const kept = this.#entries.get(key);
    this.#entries.delete(key);
    return kept !== undefined && kept.expiresAt > this.clock.now();
  }

  #sweep(): void {
    const now = this.clock.now();
    for (const [key, kept] of this.#entries) if (kept.expiresAt <= now) this.#entries.delete(key);
  }
}

/** One map key of parts that may hold any character: each part's length before it. */
export function compositeKey(...parts: readonly string[]): string {
  return parts.map((part) => `${part.length}:${part}`).join('');
}

/** The memory engine's data. */
export class EngineState {
  readonly states: ExpiringMap<unknown>;
  readonly bans: ExpiringMap<Ban>;
  /** Each lessee set: node id -> time of its last lease. */
  readonly lessees: ExpiringMap<Map<string, number>>;
  readonly fleets: ExpiringMap<Fleet>;
  readonly versions = new Map<string, number>();
  readonly configs = new Map<string, ConfigRecord>();

  constructor(readonly clock: Clock) {
    this.states = new ExpiringMap(clock);
    this.bans = new ExpiringMap(clock);
    this.lessees = new ExpiringMap(clock);
    this.fleets = new ExpiringMap(clock);
  }

  /**
   * The newer version that refuses a call of `prefix` under `version`, or undefined (and the version kept
   * raised to it): stale_version in @sluice/redis's prelude.lua.
   */
  stale(prefix: string, version: number | undefined): number | undefined {
    if (version === undefined) return undefined;
    const stored = this.versions.get(prefix) ?? 1;
    if (stored > version) return stored;
    if (stored < version) this.versions.set(prefix, version);
    return undefined;
  }

  /** The ban in force on `key` of `prefix` at `now`. */
  ban(prefix: string, key: string, now: number): Ban | undefined {
    const ban = this.bans.get(compositeKey(prefix, key));
    return ban !== undefined && ban.until > now ? ban : undefined;
  }

  /** Starts `ban`, or keeps the one in force when it ends later. */
  startBan(prefix: string, key: string, ban: Ban, now: number): Ban {
    const kept = longerBan(this.ban(prefix, key, now), ban);
    // Reclaimed on the engine's clock once the ban has ended on the decision's.
    this.bans.set(compositeKey(prefix, key), kept, kept.until - now + 1);
    return kept;
  }
}
