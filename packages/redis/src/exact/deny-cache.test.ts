import { type Decision, TOLERANCE_MS } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { DenyCache } from './deny-cache.js';

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
    cache.record('k', denied, 1_000);
    expect(cache.get('k', 1_003)).toMatchObject({ allowed: false, retryAfterMs: 2, resetAfterMs: 5 });
  });

  it('stops TOLERANCE_MS before the retry time, where the algorithms may already grant', () => {
    const cache = new DenyCache(100);
    cache.record('k', denied, 1_000);
    expect(cache.get('k', 1_005 - 2 * TOLERANCE_MS)).toBeDefined();
    // 0.999 us early: Redis grants this (found by the conformance suite on smoothWarmingUp).
    expect(cache.get('k', 1_005 - 0.999 * TOLERANCE_MS)).toBeUndefined();
  });

  it('keeps a blocked denial only while its ban lasts', () => {
    const cache = new DenyCache(100);
    cache.record('k', { ...denied, retryAfterMs: 60_000 }, 0, 2_000);
    expect(cache.get('k', 1_500)).toBeDefined();
    expect(cache.get('k', 2_000)).toBeUndefined();
  });

  it('forgets a key on a grant, and never caches a denial that cannot pass', () => {
    const cache = new DenyCache(100);
    cache.record('k', denied, 0);
    cache.record('k', { ...denied, allowed: true }, 1);
    expect(cache.get('k', 2)).toBeUndefined();
    cache.record('k', { ...denied, retryAfterMs: Number.POSITIVE_INFINITY }, 3);
    expect(cache.get('k', 4)).toBeUndefined();
  });
});
