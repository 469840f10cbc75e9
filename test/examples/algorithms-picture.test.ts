import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lanes, render, simulate } from '../../scripts/render-algorithms.js';

describe('docs/algorithms.svg', () => {
  it('is what the simulation renders now (npm run docs:picture regenerates it)', () => {
    expect(readFileSync(new URL('../../docs/algorithms.svg', import.meta.url), 'utf8')).toBe(render());
  });

  it('shows what each algorithm promises: 2x across a fixed-window boundary, never over the limit in a sliding window', () => {
    const worst = Object.fromEntries(lanes.map((lane) => [lane.title, simulate(lane).worstSecond]));
    // Each lane (one or more per kind of LANES, a table the compiler checks) admits what it says it promises.
    expect(worst).toEqual(Object.fromEntries(lanes.map((lane) => [lane.title, lane.mostInAnySecond])));
    expect(worst['fixedWindow 10 / 1 s']).toBe(20);
    expect(worst['slidingWindowLog 10 / 1 s']).toBe(10);
  });
});
