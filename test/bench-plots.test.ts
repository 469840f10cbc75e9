/**
 * The pictures the README shows are drawn from the committed bench results: re-drawing each from
 * bench/results/*.json gives the committed SVG byte for byte (run `npm run bench`, or
 * `tsx bench/src/render-plots.ts` after editing results, to refresh them).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pictures } from '../bench/src/render-plots.js';
import { fleetTimelinePlot } from '../bench/src/plots.js';

describe('bench plots', () => {
  it.each(pictures().map((p) => [p.file.replace(/^.*\/bench\//, 'bench/'), p] as const))(
    '%s is what the committed results draw',
    (_name, picture) => {
      expect(readFileSync(picture.file, 'utf8')).toBe(picture.svg);
    },
  );

  it('the timeline draws the data it is given (a changed count changes the picture)', () => {
    const timelines = {
      nodes: 1,
      bucketMs: 100,
      capacity: 10,
      rate: 100,
      seconds: 1,
      series: { exact: [20, 10, 10, 10, 10, 10, 10, 10, 10, 10] },
    };
    const one = fleetTimelinePlot(timelines);
    const other = fleetTimelinePlot({ ...timelines, series: { exact: [20, 10, 10, 10, 10, 9, 10, 10, 10, 10] } });
    expect(one).not.toBe(other);
    expect(one).toContain('<polyline');
    expect(one).toMatch(/stroke-dasharray/); // the limit
  });
});
