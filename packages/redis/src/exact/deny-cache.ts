import type { Decision } from '@sluice/core';
import { keyCache, TOLERANCE_MS } from '@sluice/core/store-kit';
import type { LRUCache } from 'lru-cache';

/**
 * The longest a cached denial is answered before Redis is asked again, whatever its retryAfterMs. A change on
 * another node reaches the cache as a message on the limiter's channel; a node that missed it (its subscriber
 * reconnecting) would otherwise go on denying under the old state until retryAfterMs, which a daily quota puts
 * hours away. Costs one Redis call per hot denied key per this interval.
 */
export const DENY_CACHE_TRUST_MS = 5_000;

interface CachedDenial {
  /** Local time until which the answer holds: when the request could succeed, or a blocked key's ban ends. */
  readonly until: number;
  /** Local time at which the denied request could succeed (now + retryAfterMs when denied). */
  readonly retryAt: number;
  readonly resetAt: number;
  /** The configuration version the denial was asked under: it holds under that version only. */
  readonly version: number;
  readonly decision: Decision;
}

/**
 * Remembers single-permit denials of a single-rule limiter until they can change, so a hot denied key
 * costs no Redis call. Only those are cached because they are exact: with one permit asked and none
 * left, nothing but time (or this node's own grants, which drop the entry) can change the answer before
 * retryAfterMs, so the cached answer, with its times moved on, is what Redis would have said.
 * Times are this process's clock: a duration, immune to skew between nodes and Redis.
 *
 * What else can turn a denial into a grant is a change on any node: a new configuration version (a limit
 * raised, an override set or removed), a reset, an unblock, a refund. A denial is kept with the configuration
 * version it was asked under and holds under that version only, whichever way this node learns of the next
 * one (a message, a stale answer, ready()); a reset, unblock or refund is announced on the limiter's channel
 * and drops the key on every node that hears it (see RedisControls).
 */
export class DenyCache {
  readonly #entries: LRUCache<string, CachedDenial>;

  constructor(maxKeys: number) {
    this.#entries = keyCache<string, CachedDenial>(maxKeys);
  }

  /** The cached denial for `key` at local time `now` under configuration `version`, or undefined. */
  get(key: string, now: number, version: number): Decision | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (now >= entry.until || entry.version !== version) {
      this.#entries.delete(key);
      return undefined;
    }
    return { ...entry.decision, retryAfterMs: entry.retryAt - now, resetAfterMs: Math.max(0, entry.resetAt - now) };
  }

  /**
   * Records what Redis answered for a single-permit request asked at local time `now` under configuration
   * `version`. A blocked denial is kept only while its ban lasts (`banRestMs`): a request after that must
   * reach Redis, where a denial by a rule with blockMs starts the next ban.
   */
  record(key: string, decision: Decision, now: number, version: number, banRestMs?: number): void {
    if (decision.allowed || !Number.isFinite(decision.retryAfterMs)) {
      this.#entries.delete(key);
      return;
    }
    const retryAt = now + decision.retryAfterMs;
    // The algorithms grant a request up to TOLERANCE_MS before its retry time (rounding in the float maths
    // must not deny a request that is on time), so the cached answer stops TOLERANCE_MS before it, where
    // Redis may already grant (a smoothWarmingUp request 0.999 us early was denied here and granted there).
    const until = Math.min(
      (banRestMs === undefined ? retryAt : Math.min(retryAt, now + banRestMs)) - TOLERANCE_MS,
      now + DENY_CACHE_TRUST_MS,
    );
    this.#entries.set(key, { until, retryAt, resetAt: now + decision.resetAfterMs, version, decision });
  }

  /** Drops every cached denial (the rules they were decided under changed). */
  clear(): void {
    this.#entries.clear();
  }

  /** Whether a denial of `key` is kept (it may have run out: `get` says). */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
