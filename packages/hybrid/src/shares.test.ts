import { describe, expect, it } from 'vitest';
import { awayFraction, divideShares, localFraction } from './shares.js';

const nodes = (...demands: number[]) => demands.map((demand, i) => ({ id: `n${i}`, demand }));
const rounded = (m: Map<string, number>) => [...m.values()].map((v) => Math.round(v * 1000) / 1000);

describe('divideShares', () => {
  it("'equal' splits the limit evenly whatever the demand", () => {
    expect(rounded(divideShares('equal', nodes(1600, 200, 100, 100), 1000))).toEqual([0.25, 0.25, 0.25, 0.25]);
  });

  it("'demand' gives small nodes what they ask and the busy ones the rest (max-min fair)", () => {
    expect(rounded(divideShares('demand', nodes(1600, 200, 100, 100), 1000))).toEqual([0.6, 0.2, 0.1, 0.1]);
    expect(rounded(divideShares('demand', nodes(800, 800, 100, 100), 1000))).toEqual([0.4, 0.4, 0.1, 0.1]);
  });

  it('splits what nobody asked for equally, so every share sums to the whole limit', () => {
    expect(rounded(divideShares('demand', nodes(100, 100, 0, 0), 1000))).toEqual([0.288, 0.288, 0.213, 0.213]);
    for (const demands of [
      [0, 0],
      [5, 5000, 1],
      [1e9, 1e9, 1e9],
    ]) {
      const total = [...divideShares('demand', nodes(...demands), 1000).values()].reduce((a, b) => a + b, 0);
      expect(total).toBeCloseTo(1, 12);
    }
  });

  it('no nodes, no shares; an idle node keeps a tenth of an equal split, never zero', () => {
    expect(divideShares('demand', [], 1000).size).toBe(0);
    expect(rounded(divideShares('demand', nodes(-5, 1000), 1000))).toEqual([0.05, 0.95]);
    expect(rounded(divideShares('demand', nodes(Number.NaN, 0, 5000, 5000), 1000))).toEqual([
      0.025, 0.025, 0.475, 0.475,
    ]);
  });
});

describe('divideShares input', () => {
  it('refuses an unknown mode, a non-array and a limit that is not a positive number', () => {
    expect(() => divideShares('fair' as never, [], 10)).toThrow(/mode must be 'equal' or 'demand', got "fair"/);
    expect(() => divideShares('equal', {} as never, 10)).toThrow(/nodes must be an array/);
    expect(() => divideShares('demand', [], 0)).toThrow(/limitPerSecond must be a finite number > 0, got 0/);
  });
});

describe('what a node holds while Redis is away', () => {
  it('its allocation beyond its share, when that is a whole permit; with its share, never past its allocation', () => {
    // 1,000 nodes on 4,000/s: a share of 2.8 permits is under LEAST_HELD (none held); away, all 4 are.
    expect(localFraction(0.001, 4_000, 0.7)).toBe(0);
    expect(awayFraction(0.001, 0, 4_000)).toBe(0.001);
    // 10 nodes on 100: holds 7, and 3 more while away.
    const held = localFraction(0.1, 100, 0.7);
    expect(held + awayFraction(0.1, held, 100)).toBeCloseTo(0.1, 12);
    // Under one permit of the burst: none (the fleet's rounding must not add up past the limit).
    expect(awayFraction(0.001, 0, 500)).toBe(0);
  });
});
