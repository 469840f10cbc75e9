import { type Decision } from '@sluice/core';
import { keyCache } from '@sluice/core/store-kit';
import type { LRUCache } from 'lru-cache';

interface CachedDenial {
  /** Local time at which the denied request could succeed (now + retryAfterMs when denied). */
  readonly until: number;
  readonly resetAt: number;
  readonly decision: Decision;
}

/**
 * Remembers single-permit denials of a single-rule limiter until they can change, so a hot denied key
 * costs no Redis call. Only those are cached because they are exact: with one permit asked and none
 * left, nothing but time (or this node's own grants, which drop the entry) can change the answer before
 * retryAfterMs, so the cached answer, with its times moved on, is what Redis would have said.
 * Times are this process's clock: a duration, immune to skew between nodes and Redis.
 */
export class DenyCache {
  readonly #entries: LRUCache<string, CachedDenial>;

  constructor(maxKeys: number) {
    this.#entries = keyCache<string, CachedDenial>(maxKeys);
  }

  /** The cached denial for `key` at local time `now`, or undefined. */
  get(key: string, now: number): Decision | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (now >= entry.until) {
      this.#entries.delete(key);
      return undefined;
    }
    return { ...entry.decision, retryAfterMs: entry.until - now, resetAfterMs: Math.max(0, entry.resetAt - now) };
  }

  /** Records what Redis answered for a single-permit request at local time `now`. */
  record(key: string, decision: Decision, now: number): void {
    if (decision.allowed || !Number.isFinite(decision.retryAfterMs)) {
      this.#entries.delete(key);
      return;
    }
    this.#entries.set(key, { until: now + decision.retryAfterMs, resetAt: now + decision.resetAfterMs, decision });
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
