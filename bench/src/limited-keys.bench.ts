/**
 * What a limiter's operations features cost the memory store's hot path when nothing is listed: the sketch
 * of limited keys (`limitedKeys`, on by default: topLimited) and the allow and deny lists (`accessList`, on
 * by default, empty here). ns per decision of three configurations (bare: both off; sketch: the sketch on;
 * default: both on), each measured alone in a fresh process (one configuration per process: in one process
 * the second configuration inherits the first's JIT feedback, which showed as a 1.3x "cost" of a branch),
 * in three scenarios (every decision a grant far from the limit; every decision a denial, each counted by
 * the sketch; every decision a grant near the limit, each counted). ROUNDS rounds, the configurations'
 * order turning each round; ratios are the medians of each round's ratio to bare. Target: at most 1.05.
 * Writes bench/results/limited-keys.json.
 *
 * Run: pnpm --filter @sluice/bench bench:limited-keys (BENCH_ROUNDS=n for more rounds)
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const worker = fileURLToPath(new URL('./limited-keys-worker.ts', import.meta.url));
const CONFIGURATIONS = ['bare', 'sketch', 'default'] as const;
type Configuration = (typeof CONFIGURATIONS)[number];

function sample(scenario: string, configuration: Configuration): number {
  const r = spawnSync(
    process.execPath,
    ['--conditions=sluice-source', '--import', 'tsx', worker, scenario, configuration],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`worker ${scenario} ${configuration} failed:\n${r.stderr}`);
  return (JSON.parse(r.stdout.trim().split('\n').pop() as string) as { ns: number }).ns;
}

const scenarios = ['allowed', 'limited', 'near'];
const rows = scenarios.map((scenario) => {
  const ns: Record<Configuration, number[]> = { bare: [], sketch: [], default: [] };
  const ratios = { sketch: [] as number[], default: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    // The order turns each round: no configuration always runs first (a cold machine) or last.
    const order = CONFIGURATIONS.map((_, k) => CONFIGURATIONS[(k + round) % CONFIGURATIONS.length] as Configuration);
    const got = {} as Record<Configuration, number>;
    for (const configuration of order) got[configuration] = sample(scenario, configuration);
    for (const c of CONFIGURATIONS) ns[c].push(got[c]);
    ratios.sketch.push(got.sketch / got.bare);
    ratios.default.push(got.default / got.bare);
  }
  const row = {
    scenario,
    bareNs: median(ns.bare),
    sketchNs: median(ns.sketch),
    defaultNs: median(ns.default),
    sketchRatio: median(ratios.sketch),
    defaultRatio: median(ratios.default),
    samples: { ns, ratios },
  };
  console.log(
    `${scenario.padEnd(8)} bare ${row.bareNs.toFixed(1)} ns  sketch ${row.sketchNs.toFixed(1)} ns (${row.sketchRatio.toFixed(3)}x)  ` +
      `default ${row.defaultNs.toFixed(1)} ns (${row.defaultRatio.toFixed(3)}x)`,
  );
  return row;
});
writeJson(fileURLToPath(new URL('../results/limited-keys.json', import.meta.url)), {
  what:
    'memory-store tryAcquire: bare (limitedKeys and accessList off), sketch (limitedKeys on), default (both on, lists empty); ' +
    'one configuration per process, medians of rounds, ratios to bare',
  rounds: ROUNDS,
  rows,
});
