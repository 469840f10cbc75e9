import type { Decision } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { DENY_CACHE_TRUST_MS, DenyCache } from './deny-cache.js';
import { TOLERANCE_MS } from '@sluice/core/internal';

const denied: Decision = {
  allowed: false,
  limit: 10,
  remaining: 0,
  retryAfterMs: 5,
  resetAfterMs: 8,
  waitMs: 0,
  rule: 'r',
};

describe('DenyCache', () => {
  it('answers a denial with its times moved on until it can change', () => {
    const cache = new DenyCache(100);
    cache.record('k', denied, 1_000, 1);
    expect(cache.get('k', 1_003, 1)).toMatchObject({ allowed: false, retryAfterMs: 2, resetAfterMs: 5 });
  });

  it('stops TOLERANCE_MS before the retry time, where the algorithms may already grant', () => {
    const cache = new DenyCache(100);
    cache.record('k', denied, 1_000, 1);
    expect(cache.get('k', 1_005 - 2 * TOLERANCE_MS, 1)).toBeDefined();
    // 0.999 us early: Redis grants this (found by the conformance suite on smoothWarmingUp).
    expect(cache.get('k', 1_005 - 0.999 * TOLERANCE_MS, 1)).toBeUndefined();
  });

  it('keeps a blocked denial only while its ban lasts', () => {
    const cache = new DenyCache(100);
    cache.record('k', { ...denied, retryAfterMs: 60_000 }, 0, 1, 2_000);
    expect(cache.get('k', 1_500, 1)).toBeDefined();
    expect(cache.get('k', 2_000, 1)).toBeUndefined();
  });

  it('forgets a key on a grant, and never caches a denial that cannot pass', () => {
    const cache = new DenyCache(100);
    cache.record('k', denied, 0, 1);
    cache.record('k', { ...denied, allowed: true }, 1, 1);
    expect(cache.get('k', 2, 1)).toBeUndefined();
    cache.record('k', { ...denied, retryAfterMs: Number.POSITIVE_INFINITY }, 3, 1);
    expect(cache.get('k', 4, 1)).toBeUndefined();
  });

  it('holds a denial under the configuration version it was asked under only', () => {
    const cache = new DenyCache(100);
    cache.record('k', denied, 1_000, 2);
    // This node learned of version 3 (a limit raised on another node): the denial may no longer hold.
    expect(cache.get('k', 1_001, 3)).toBeUndefined();
    // Dropped, not only hidden: back under version 2 nothing is answered from it either.
    expect(cache.get('k', 1_001, 2)).toBeUndefined();
    cache.record('k', denied, 1_000, 3);
    expect(cache.get('k', 1_001, 3)).toMatchObject({ allowed: false });
  });

  it('asks Redis again after DENY_CACHE_TRUST_MS, however far its retry time (a missed message heals)', () => {
    const cache = new DenyCache(100);
    // A day's quota spent: its retry time is hours away.
    cache.record('k', { ...denied, retryAfterMs: 3_600_000, resetAfterMs: 3_600_000 }, 0, 1);
    expect(cache.get('k', DENY_CACHE_TRUST_MS - 1, 1)).toMatchObject({
      retryAfterMs: 3_600_000 - DENY_CACHE_TRUST_MS + 1,
    });
    expect(cache.get('k', DENY_CACHE_TRUST_MS, 1)).toBeUndefined();
  });
});
