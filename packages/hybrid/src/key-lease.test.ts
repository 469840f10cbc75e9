import { describe, expect, it } from 'vitest';
import { nextAskAfterEmpty } from './key-lease.js';

describe('nextAskAfterEmpty', () => {
  it('spreads N lessees over N / 2 batches of refill, a lone one asking as soon as its batch is back', () => {
    expect(nextAskAfterEmpty(0.5, 1, false, 0.5)).toBe(0.5);
    expect(nextAskAfterEmpty(0.5, 1_000, false, 0.5, () => 0)).toBe(125);
    expect(nextAskAfterEmpty(0.5, 1_000, false, 0.5, () => 1)).toBe(375);
  });

  it('waits out a debt once, not once per lessee (after an outage charged the bucket: 100 s before)', () => {
    // 817 permits owed on a 4,000/s bucket, 2 asked: 204 ms until they are back.
    const retryMs = ((817 + 2) / 4_000) * 1_000;
    const batchMs = (2 / 4_000) * 1_000;
    expect(nextAskAfterEmpty(retryMs, 1_000, false, batchMs, () => 1)).toBeCloseTo(retryMs - batchMs + 375, 9);
    expect(nextAskAfterEmpty(retryMs, 1_000, false, batchMs, () => 1)).toBeLessThan(600);
  });

  it('a window asks when it ends, whatever the fleet', () => {
    expect(nextAskAfterEmpty(700, 1_000, true, 1)).toBe(700);
  });
});
