/**
 * Renders the bench's SVG plots beside its JSON results (bench/results/*.svg). `npm run bench` runs it
 * after the benches; a test checks that the committed pictures are what the committed results draw.
 *   tsx src/render-plots.ts           writes the files
 *   tsx src/render-plots.ts --check   exits 1 if a committed picture is stale
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type CoreRow,
  type FleetScaleRow,
  type FleetTimelines,
  type RedisRow,
  fleetScalePlot,
  fleetTimelinePlot,
  localPeersPlot,
  redisPeersPlot,
} from './plots.js';

const results = (name: string) => fileURLToPath(new URL(`../results/${name}`, import.meta.url));
const readJson = <T>(name: string): T => JSON.parse(readFileSync(results(name), 'utf8')) as T;

/** Every picture: its file and how it is drawn from the committed results. */
export function pictures(): { file: string; svg: string }[] {
  return [
    {
      file: results('fleet-timeline.svg'),
      svg: fleetTimelinePlot(readJson<{ timelines: FleetTimelines }>('hybrid.json').timelines),
    },
    { file: results('local-peers.svg'), svg: localPeersPlot(readJson<{ rows: CoreRow[] }>('core.json').rows) },
    { file: results('redis-peers.svg'), svg: redisPeersPlot(readJson<{ rows: RedisRow[] }>('redis.json').rows) },
    ...(['even', 'skewed'] as const).map((scenario) => ({
      file: results(`fleet-scale-${scenario}.svg`),
      svg: fleetScalePlot(readJson<{ rows: FleetScaleRow[] }>('fleet.json').rows, scenario),
    })),
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const { file, svg } of pictures()) {
    if (check) {
      const same = existsSync(file) && readFileSync(file, 'utf8') === svg;
      if (!same) stale++;
      console.log(`${same ? 'up to date' : 'STALE     '} ${file}`);
    } else {
      writeFileSync(file, svg);
      console.log(`wrote ${file}`);
    }
  }
  process.exitCode = stale > 0 ? 1 : 0;
}
