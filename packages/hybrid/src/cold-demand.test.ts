import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ColdDemand } from './cold-demand.js';

const SEED = 7;

describe('ColdDemand', () => {
  it('counts a key within an interval, and remembers the interval before', () => {
    const cold = new ColdDemand(100, 1_000, 0, SEED);
    expect(cold.add('a', 1, 0)).toBe(1);
    expect(cold.add('a', 2, 50)).toBe(3);
    // The next interval: the last one's 3 is the demand until this one's passes it.
    expect(cold.add('a', 1, 120)).toBe(3);
    expect(cold.add('a', 3, 150)).toBe(4);
    // Two intervals on, the first is forgotten.
    expect(cold.add('a', 1, 210)).toBe(4);
    expect(cold.add('b', 1, 210)).toBe(1);
  });

  it('forgets everything after an idle interval', () => {
    const cold = new ColdDemand(100, 1_000, 0, SEED);
    cold.add('a', 5, 10);
    expect(cold.add('a', 1, 250)).toBe(1);
    cold.add('a', 5, 260);
    expect(cold.add('a', 1, 500)).toBe(1);
  });

  it('counts a flood in fixed memory: an interval that counted as many requests as a row has counters starts the next', () => {
    // maxKeys 3: rows of 16 counters (the least width).
    const cold = new ColdDemand(100, 3, 0, SEED);
    cold.add('a', 2, 0);
    for (let i = 0; i < 15; i++) cold.add(`flood:${i}`, 1, 0);
    // The 17th request starts a new interval: 'a' is in the interval before.
    expect(cold.add('a', 1, 1)).toBeGreaterThanOrEqual(2);
    for (let i = 0; i < 16; i++) cold.add(`flood2:${i}`, 1, 2);
    for (let i = 0; i < 16; i++) cold.add(`flood3:${i}`, 1, 3);
    // Two floods on, 'a' is forgotten up to what the floods' own keys left in its counters.
    expect(cold.add('a', 1, 4)).toBeLessThanOrEqual(2);
  });

  it('a count past 255 saturates in the counters, never in what add returns', () => {
    const cold = new ColdDemand(100, 1_000, 0, SEED);
    expect(cold.add('a', 1_000, 0)).toBe(1_000);
    expect(cold.add('a', 1, 0)).toBe(256);
    expect(cold.add('a', 1, 120)).toBe(255);
  });

  it('delete forgets a key in both intervals', () => {
    const cold = new ColdDemand(100, 1_000, 0, SEED);
    cold.add('a', 4, 0);
    cold.add('a', 2, 110);
    cold.delete('a');
    expect(cold.add('a', 1, 120)).toBe(1);
  });

  it('never counts less than a key asked (a model with one Map per interval)', () => {
    const step = fc.record({
      key: fc.integer({ min: 0, max: 40 }),
      permits: fc.integer({ min: 1, max: 5 }),
      dt: fc.nat(80),
    });
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 300 }),
        fc.integer(),
        fc.integer({ min: 1, max: 64 }),
        (steps, seed, maxKeys) => {
          const cold = new ColdDemand(100, maxKeys, 0, seed);
          const width = 2 ** Math.min(15, Math.max(4, Math.ceil(Math.log2(maxKeys))));
          let [start, counted, now] = [0, 0, 0];
          let current = new Map<number, number>();
          let previous = new Map<number, number>();
          for (const { key, permits, dt } of steps) {
            now += dt;
            const elapsed = now - start;
            if (elapsed >= 100 || counted >= width) {
              const recent = elapsed < 200;
              previous = recent ? current : new Map();
              current = new Map();
              start = recent && elapsed >= 100 ? start + 100 : now;
              counted = 0;
            }
            counted += 1;
            const count = (current.get(key) ?? 0) + permits;
            current.set(key, count);
            const demand = Math.max(count, previous.get(key) ?? 0);
            expect(cold.add(`user:${key}`, permits, now)).toBeGreaterThanOrEqual(Math.min(demand, 255));
          }
        },
      ),
    );
  });
});
