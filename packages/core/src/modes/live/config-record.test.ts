import { tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import {
  type CarryLink,
  type LiveConfig,
  MAX_OVERRIDES,
  firstConfig,
  overridden,
  reconfigured,
  withoutOverride,
} from './config-record.js';

const bucket = (capacity: number) => tokenBucket({ name: 'api', capacity, refillPerSecond: 1 });
const NOW = 1_000_000;

/** A configuration whose record holds `removed` keys whose override was removed, still carrying back. */
function withRemoved(removed: number): LiveConfig {
  const base = firstConfig([bucket(10)]);
  const link: CarryLink = { rule: bucket(50), state: 'api\u0002o2', mode: 'used', until: NOW + 60_000 };
  const returning = new Map(Array.from({ length: removed }, (_, i) => [`k${i}`, { api: [link] }] as const));
  return { ...base, version: 3, returning };
}

describe('the configuration record is bounded (issue #44, item 19)', () => {
  it('removed overrides still carrying back count toward MAX_OVERRIDES: a new override past it is a typed error', () => {
    const full = withRemoved(MAX_OVERRIDES);
    expect(() => overridden(full, 'new', [bucket(5)], 4, NOW)).toThrow(
      expect.objectContaining({
        name: 'SluiceRangeError',
        message: expect.stringMatching(/0 in force, 10000 removed/),
      }),
    );
    // A key already held (its removed override) may be overridden again: it takes no more room.
    expect(overridden(full, 'k7', [bucket(5)], 4, NOW).overrides.get('k7')).toHaveLength(1);
    // Once the removed ones stop mattering they are dropped, and room comes back.
    expect(overridden(full, 'new', [bucket(5)], 4, NOW + 61_000).returning.size).toBe(0);
  });

  it('removing an override never drops another key carried back', () => {
    let config = withRemoved(3);
    config = overridden(config, 'x', [bucket(5)], 4, NOW);
    config = withoutOverride(config, 'x', 5, NOW);
    expect([...config.returning.keys()].sort()).toEqual(['k0', 'k1', 'k2', 'x']);
    expect(reconfigured(config, [bucket(20)], 'used', 6, NOW).returning.size).toBe(4);
  });
});
