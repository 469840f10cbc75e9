/**
 * The in-flight scenario of the core bench on its own (issue #45): 128 awaited decisions in flight over 10,000
 * keys, sluice's memory store beside rate-limiter-flexible's RateLimiterMemory. Each subject runs in a fresh
 * process, ROUNDS rounds interleaved (rlf, fixedWindow, tokenBucket, rlf, ...), so a noisy neighbour hits every
 * subject alike; medians are reported with the spread, and each round's ratio is taken within the round.
 * Then heap bytes allocated per decision, and the collections that ran in the timed runs.
 * Writes bench/results/inflight.json.
 *
 * Run: pnpm --filter @sluice/bench bench:inflight   (BENCH_ROUNDS=9 for more rounds)
 * A change beside what it changed, in one run: BENCH_BEFORE=<another checkout>/packages/core/src/index.ts adds
 * its sluice subjects as `<id>@before` (and BENCH_CORE=<path> measures other sources than this checkout's).
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { IN_FLIGHT, IN_FLIGHT_SUBJECTS } from './core-inflight.js';
import { fmt, median, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const worker = fileURLToPath(new URL('./inflight-worker.ts', import.meta.url));
const BEFORE = process.env.BENCH_BEFORE;
const sluiceIds = Object.keys(IN_FLIGHT_SUBJECTS).filter((id) => id !== 'rlf');
const ids = ['rlf', ...sluiceIds.flatMap((id) => (BEFORE ? [`${id}@before`, id] : [id]))];
const labelOf = (id: string) =>
  id.endsWith('@before')
    ? `${IN_FLIGHT_SUBJECTS[id.slice(0, -'@before'.length)]?.label} (before)`
    : IN_FLIGHT_SUBJECTS[id]?.label;

/** `<id>@before` runs `<id>` on the sources at BENCH_BEFORE. */
function runWorker([mode, id]: [string, string], flags: string[] = []): Record<string, number> {
  const before = id.endsWith('@before');
  const core = before ? BEFORE : process.env.BENCH_CORE;
  const r = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      ...flags,
      '--conditions=sluice-source',
      '--import',
      'tsx',
      worker,
      mode,
      before ? id.slice(0, -'@before'.length) : id,
    ],
    { encoding: 'utf8', env: core === undefined ? process.env : { ...process.env, SLUICE_CORE: core } },
  );
  if (r.status !== 0) throw new Error(`worker ${mode} ${id} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Record<string, number>;
}

const load = loadavg()[0] as number;
console.log(`sluice in-flight bench — node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
console.log(
  `${IN_FLIGHT} awaited decisions in flight, 10,000 keys; ${ROUNDS} interleaved rounds; load ${load.toFixed(2)}\n`,
);

const runs = new Map<string, Record<string, number>[]>(ids.map((id) => [id, []]));
for (let round = 1; round <= ROUNDS; round++) {
  // Each round starts one subject later, so no subject always runs first (or after the same one).
  for (const id of ids.map((_, i) => ids[(i + round - 1) % ids.length] as string)) {
    const m = runWorker(['inflight', id]);
    runs.get(id)?.push(m);
    console.log(
      `  round ${round} ${id.padEnd(20)} ${fmt(m.decisionsPerSecond as number).padStart(7)}/s ` +
        `(${fmt(m.decisionsPerCpuSecond as number)}/cpu-s) ` +
        `p50 ${(m.p50Us as number).toFixed(0)} p99 ${(m.p99Us as number).toFixed(0)} p99.9 ${(m.p999Us as number).toFixed(0)} us, ` +
        `${m.gcs} gcs (${m.major} major) ${(m.gcMs as number).toFixed(0)} ms, longest ${(m.gcMaxMs as number).toFixed(1)} ms`,
    );
  }
}

// Heap allocated per decision, in processes whose young generation takes the whole count without a collection.
const ALLOC_FLAGS = ['--min-semi-space-size=256', '--max-semi-space-size=256'];
const allocation = [...ids, 'nothing'].map((id) => {
  const b = [0, 1, 2].map(() => runWorker(['alloc', id], ALLOC_FLAGS).bytesPerDecision as number);
  return { subject: id, bytesPerDecision: median(b) };
});

const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
const field = (id: string, f: string) => (runs.get(id) ?? []).map((r) => r[f] as number);
const rows = ids.map((id) => ({
  subject: id,
  label: labelOf(id),
  decisionsPerSecond: median(field(id, 'decisionsPerSecond')),
  decisionsPerCpuSecond: median(field(id, 'decisionsPerCpuSecond')),
  p50Us: median(field(id, 'p50Us')),
  p99Us: median(field(id, 'p99Us')),
  p999Us: median(field(id, 'p999Us')),
  gcs: median(field(id, 'gcs')),
  gcMs: median(field(id, 'gcMs')),
  gcMaxMs: median(field(id, 'gcMaxMs')),
  // Within each round, against that round's RateLimiterMemory: the noise of a round hits both.
  vsRateLimiterMemory: median(
    field(id, 'decisionsPerSecond').map((d, i) => d / (field('rlf', 'decisionsPerSecond')[i] as number)),
  ),
  cpuVsRateLimiterMemory: median(
    field(id, 'decisionsPerCpuSecond').map((d, i) => d / (field('rlf', 'decisionsPerCpuSecond')[i] as number)),
  ),
  roundsDecisionsPerSecond: field(id, 'decisionsPerSecond'),
  roundsP999Us: field(id, 'p999Us'),
  bytesPerDecision: allocation.find((a) => a.subject === id)?.bytesPerDecision,
}));

console.log(
  '\n| subject | decisions/s (median; spread) | vs RLM (median of rounds) | per CPU-s, vs RLM | p50 us | p99 us | p99.9 us (spread) | GCs, ms | B/decision |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const p999 = r.roundsP999Us;
  console.log(
    `| ${r.label} | ${fmt(r.decisionsPerSecond)} (${spread(r.roundsDecisionsPerSecond)}) | ${r.vsRateLimiterMemory.toFixed(2)}x | ` +
      `${fmt(r.decisionsPerCpuSecond)}, ${r.cpuVsRateLimiterMemory.toFixed(2)}x | ` +
      `${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${r.p999Us.toFixed(0)} (${Math.min(...p999).toFixed(0)}–${Math.max(...p999).toFixed(0)}) | ` +
      `${r.gcs}, ${r.gcMs.toFixed(0)} | ${r.bytesPerDecision?.toFixed(0)} |`,
  );
}
console.log(
  `\nthe drive loop alone allocates ${allocation.find((a) => a.subject === 'nothing')?.bytesPerDecision.toFixed(0)} B per decision (included above)`,
);

writeJson(fileURLToPath(new URL('../results/inflight.json', import.meta.url)), {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model,
  cores: cpus().length,
  loadAverageAtStart: load,
  method: `${IN_FLIGHT} awaited decisions in flight over 10,000 keys, 1,000,000 timed after 200,000 warm-up, each subject in a fresh process, ${ROUNDS} interleaved rounds, medians`,
  rows,
  allocation,
});
