import { describe, expect, it } from 'vitest';
import { ColdDemand } from './cold-demand.js';

describe('ColdDemand', () => {
  it('counts a key within an interval, and remembers the interval before', () => {
    const cold = new ColdDemand(100, 1_000, 0);
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
    const cold = new ColdDemand(100, 1_000, 0);
    cold.add('a', 5, 10);
    expect(cold.add('a', 1, 250)).toBe(1);
  });

  it('holds at most maxKeys keys in an interval: a flood starts the next one', () => {
    const cold = new ColdDemand(100, 3, 0);
    for (const key of ['a', 'b', 'c']) cold.add(key, 1, 0);
    // 'd' starts a new interval; a, b, c are the interval before.
    expect(cold.add('d', 1, 1)).toBe(1);
    expect(cold.add('a', 1, 2)).toBe(1);
    for (const key of ['e', 'f']) cold.add(key, 1, 3);
    // Another flood: the interval holding a, b, c is gone.
    expect(cold.add('b', 1, 4)).toBe(1);
    expect(cold.add('c', 1, 4)).toBe(1);
  });

  it('delete forgets a key in both intervals', () => {
    const cold = new ColdDemand(100, 1_000, 0);
    cold.add('a', 4, 0);
    cold.add('a', 2, 110);
    cold.delete('a');
    expect(cold.add('a', 1, 120)).toBe(1);
  });
});
