import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lanes, render, simulate } from '../../scripts/render-algorithms.js';

describe('docs/algorithms.svg', () => {
  it('is what the simulation renders now (npm run docs:picture regenerates it)', () => {
    expect(readFileSync(new URL('../../docs/algorithms.svg', import.meta.url), 'utf8')).toBe(render());
  });

  it('shows what each algorithm promises: 2x across a fixed-window boundary, never over the limit in a sliding window', () => {
    const worst = Object.fromEntries(
      lanes.map((lane) => [
        lane.title.split(' ')[0] + (lane.title.includes('shape') ? '-shape' : ''),
        simulate(lane).worstSecond,
      ]),
    );
    expect(worst).toMatchObject({
      fixedWindow: 20,
      slidingWindowLog: 10,
      slidingWindowCounter: 10,
      tokenBucket: 19,
      gcra: 19,
      'leakyBucket-shape': 10,
      smoothBursty: 10,
    });
  });
});
