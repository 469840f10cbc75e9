import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HeavyHitters } from './heavy-hitters.js';

describe('HeavyHitters (Space-Saving)', () => {
  it("holds every key seen more than total / capacity times, each held key's true count within [count - error, count] (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 3 })), { maxLength: 400 }),
        (capacity, stream) => {
          const sketch = new HeavyHitters(capacity);
          const truth = new Map<string, number>();
          let total = 0;
          for (const [k, w] of stream) {
            // A skewed stream: low numbers far more often.
            const key = `k${Math.floor(Math.sqrt(k) * 2)}`;
            sketch.offer(key, w);
            truth.set(key, (truth.get(key) ?? 0) + w);
            total += w;
          }
          const held = new Map(sketch.top(capacity).map((h) => [h.key, h]));
          expect(held.size).toBe(Math.min(capacity, truth.size));
          for (const [key, count] of truth) {
            if (count > total / capacity) expect(held.has(key), key).toBe(true);
            const h = held.get(key);
            if (h === undefined) continue;
            expect(h.count - h.error).toBeLessThanOrEqual(count);
            expect(h.count).toBeGreaterThanOrEqual(count);
          }
          const counts = sketch.top(capacity).map((h) => h.count);
          expect(counts).toEqual([...counts].sort((a, b) => b - a));
        },
      ),
    );
  });

  it('merges another sketch, carrying its error; clear forgets', () => {
    const a = new HeavyHitters(3);
    const b = new HeavyHitters(3);
    for (const key of ['x', 'x', 'y']) a.offer(key);
    for (const key of ['x', 'z', 'z', 'z']) b.offer(key);
    a.merge(b.top(3));
    expect(a.top(2)).toEqual([
      { key: 'x', count: 3, error: 0 },
      { key: 'z', count: 3, error: 0 },
    ]);
    a.clear();
    expect(a.size).toBe(0);
    expect(a.top(5)).toEqual([]);
  });
});
