/**
 * The core bench: decisions per second on one hot key and over 100,000 keys, each in two regimes
 * (allowed: every decision a grant; limited: most decisions denials), for every sluice algorithm and the Guava facade
 * beside rate-limiter-flexible's RateLimiterMemory and `limiter`; then heap bytes per key.
 *
 * Every (scenario, subject) runs in its own process, ROUNDS times, interleaved; the median is reported,
 * so a noisy neighbour or one subject's JIT state does not decide a ratio. Writes bench/results/core.json.
 *
 * Run: pnpm bench   (or: pnpm --filter @sluice/bench bench:core)
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { HEAP_SUBJECTS, SCENARIOS, SUBJECTS, type Scenario } from './core-subjects.js';
import { IN_FLIGHT, IN_FLIGHT_SUBJECTS } from './core-inflight.js';
import { BATCH, fmt, median, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const worker = fileURLToPath(new URL('./core-worker.ts', import.meta.url));

function runWorker(args: string[]): Record<string, number> {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--conditions=sluice-source', '--import', 'tsx', worker, ...args],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`worker ${args.join(' ')} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Record<string, number>;
}

console.log(`sluice core bench — node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
console.log(
  `${BATCH} sequential awaited decisions per mitata sample; p50 per sample; ${ROUNDS} interleaved rounds, median\n`,
);

const samples = new Map<string, number[]>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const scenario of SCENARIOS) {
    for (const subject of SUBJECTS) {
      if (subject.id === 'facade' && scenario !== 'hot-allowed' && scenario !== 'hot-limited') continue;
      const { nsPerDecision } = runWorker(['time', subject.id, scenario]);
      const k = `${scenario}|${subject.id}`;
      samples.set(k, [...(samples.get(k) ?? []), nsPerDecision as number]);
      process.stdout.write(
        `  round ${round} ${scenario.padEnd(12)} ${subject.label.padEnd(42)} ` +
          `${fmt(1e9 / (nsPerDecision as number)).padStart(7)}/s\n`,
      );
    }
  }
}

interface Row {
  scenario: Scenario;
  subject: string;
  label: string;
  decisionsPerSecond: number;
  vsRateLimiterMemory: number;
  rounds: number[];
}
const rows: Row[] = [];
for (const scenario of SCENARIOS) {
  const base = 1e9 / median(samples.get(`${scenario}|rlf`) ?? [NaN]);
  for (const subject of SUBJECTS) {
    const s = samples.get(`${scenario}|${subject.id}`);
    if (!s) continue;
    const dps = 1e9 / median(s);
    rows.push({
      scenario,
      subject: subject.id,
      label: subject.label,
      decisionsPerSecond: dps,
      vsRateLimiterMemory: dps / base,
      rounds: s.map((ns) => 1e9 / ns),
    });
  }
}

// As a server drives the store: IN_FLIGHT awaited decisions at once over 10,000 keys (core-inflight.ts),
// each subject in its own process, ROUNDS interleaved rounds, medians.
const inFlightSamples = new Map<string, Record<string, number>[]>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const id of Object.keys(IN_FLIGHT_SUBJECTS)) {
    const m = runWorker(['inflight', id]);
    inFlightSamples.set(id, [...(inFlightSamples.get(id) ?? []), m]);
    process.stdout.write(
      `  round ${round} ${IN_FLIGHT} in flight ${id.padEnd(12)} ${fmt(m.decisionsPerSecond as number).padStart(7)}/s ` +
        `p99.9 ${(m.p999Us as number).toFixed(0)} us\n`,
    );
  }
}
const inFlight = Object.entries(IN_FLIGHT_SUBJECTS).map(([id, { label }]) => {
  const rounds = inFlightSamples.get(id) ?? [];
  const of = (field: string) => median(rounds.map((r) => r[field] as number));
  return {
    subject: id,
    label,
    decisionsPerSecond: of('decisionsPerSecond'),
    p50Us: of('p50Us'),
    p99Us: of('p99Us'),
    p999Us: of('p999Us'),
  };
});

const heap: Array<{ subject: string; label: string; bytesPerKey: number }> = [];
for (const [id, h] of Object.entries(HEAP_SUBJECTS)) {
  heap.push({ subject: id, label: h.label, bytesPerKey: runWorker(['heap', id]).bytesPerKey as number });
}

const ratio = (scenario: Scenario, subject: string) =>
  rows.find((r) => r.scenario === scenario && r.subject === subject)?.vsRateLimiterMemory ?? NaN;
const targets = [
  ...(['hot-allowed', 'hot-limited'] as const).flatMap((s) => [
    { target: `${s}: sync facade >= 10x RateLimiterMemory`, ratio: ratio(s, 'facade'), need: 10 },
    { target: `${s}: createLimiter + memoryStore (tokenBucket) >= 2x`, ratio: ratio(s, 'tokenBucket'), need: 2 },
    { target: `${s}: createLimiter + memoryStore (fixedWindow) >= 2x`, ratio: ratio(s, 'fixedWindow'), need: 2 },
  ]),
  ...(['100k-allowed', '100k-limited'] as const).flatMap((s) => [
    { target: `${s}: tokenBucket >= 2x`, ratio: ratio(s, 'tokenBucket'), need: 2 },
    { target: `${s}: fixedWindow >= 2x`, ratio: ratio(s, 'fixedWindow'), need: 2 },
  ]),
  ...heap
    .filter((h) => h.label.startsWith('sluice'))
    .map((h) => ({ target: `heap per key ${h.label} <= 200 B`, ratio: h.bytesPerKey, need: -200 })),
];

// What metrics cost: the same limiter with @sluice/otel recording on the SDK, against it with nothing listening.
const observability = SCENARIOS.flatMap((scenario) =>
  ['fixedWindow', 'tokenBucket'].map((id) => {
    const off = rows.find((r) => r.scenario === scenario && r.subject === id)?.decisionsPerSecond ?? NaN;
    const on = rows.find((r) => r.scenario === scenario && r.subject === `${id}+otel`)?.decisionsPerSecond ?? NaN;
    return { scenario, subject: id, off, on, onVsOff: on / off };
  }),
);

console.log('\n| scenario | subject | decisions/s (median) | vs RateLimiterMemory |\n| --- | --- | ---: | ---: |');
for (const r of rows)
  console.log(`| ${r.scenario} | ${r.label} | ${fmt(r.decisionsPerSecond)} | ${r.vsRateLimiterMemory.toFixed(2)}x |`);
console.log(
  '\n| scenario | limiter | nothing listening | OpenTelemetry SDK on | on / off |\n| --- | --- | ---: | ---: | ---: |',
);
for (const o of observability)
  console.log(`| ${o.scenario} | ${o.subject} | ${fmt(o.off)} | ${fmt(o.on)} | ${o.onVsOff.toFixed(2)}x |`);
console.log(
  `\n| ${IN_FLIGHT} awaited decisions in flight, 10,000 keys | decisions/s | p50 us | p99 us | p99.9 us |\n| --- | ---: | ---: | ---: | ---: |`,
);
for (const r of inFlight)
  console.log(
    `| ${r.label} | ${fmt(r.decisionsPerSecond)} | ${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${r.p999Us.toFixed(0)} |`,
  );
console.log('\n| heap per key (100,000 keys) | bytes |\n| --- | ---: |');
for (const h of heap) console.log(`| ${h.label} | ${h.bytesPerKey.toFixed(0)} |`);
console.log('\ntargets');
for (const t of targets) {
  const met = t.need < 0 ? t.ratio <= -t.need : t.ratio >= t.need;
  console.log(
    `  ${met ? 'met   ' : 'MISSED'} ${t.target}: ${t.need < 0 ? `${t.ratio.toFixed(0)} B` : `${t.ratio.toFixed(2)}x`}`,
  );
}

writeJson(fileURLToPath(new URL('../results/core.json', import.meta.url)), {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model,
  cores: cpus().length,
  method: `${BATCH} sequential awaited decisions per sample, p50, ${ROUNDS} interleaved rounds in fresh processes, median`,
  rows,
  inFlight,
  observability,
  heapPerKey: heap,
  targets,
});
