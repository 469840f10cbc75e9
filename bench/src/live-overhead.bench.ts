/**
 * What live limits cost a decision when no change is in force: Redis CPU per exact decision (INFO cpu, the
 * whole server: request, script, reply) made by this checkout and by an earlier one (BEFORE_ROOT, a worktree
 * of the commit before live limits on Redis), one after the other on one fresh Redis in interleaved rounds,
 * lone (one decision at a time: decide_one.lua, which now reads the slot's configuration version in its MGET)
 * and batched (128 in flight: decide.lua), for a fixed window, a token bucket and a two-rule policy. Medians;
 * the ratio now / before is the cost (the target: at most 1.05). Writes bench/results/live-overhead.json.
 *
 * Run: git worktree add ../before <commit> && (cd ../before && node scripts/bootstrap.mjs) &&
 *      BEFORE_ROOT=../before pnpm --filter @sluice/bench bench:live-overhead (BENCH_ROUNDS=n for more rounds)
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const DECISIONS = 20_000;
const beforeRoot = process.env.BEFORE_ROOT;
if (beforeRoot === undefined) throw new Error('BEFORE_ROOT must name a checkout of the commit to compare with');
const roots = { before: resolve(beforeRoot), now: fileURLToPath(new URL('../..', import.meta.url)) };
const child = fileURLToPath(new URL('./live-overhead-child.ts', import.meta.url));
const cases = ['fixedWindow', 'tokenBucket', 'policy'].flatMap((rules) =>
  [1, 128].map((inFlight) => ({ rules, inFlight })),
);

const server = await spawnRedisServer();

/** Runs one side once: its Redis CPU per decision. */
function run(root: string, rules: string, inFlight: number): Promise<number> {
  const p = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', child], {
    env: {
      ...process.env,
      ROOT: root,
      REDIS_URL: server.url,
      RULES: rules,
      IN_FLIGHT: String(inFlight),
      DECISIONS: String(DECISIONS),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  p.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((done, fail) =>
    p.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code !== 0 || line === undefined) fail(new Error(`${root} ${rules} failed (${code}): ${out}`));
      else done((JSON.parse(line.slice('RESULT '.length)) as { redisUsPerDecision: number }).redisUsPerDecision);
    }),
  );
}

const samples = new Map<string, { before: number[]; now: number[] }>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const { rules, inFlight } of cases) {
    const name = `${rules}, ${inFlight} in flight`;
    const s = samples.get(name) ?? { before: [], now: [] };
    samples.set(name, s);
    // Which side goes first alternates: a server warmed by one side favours the other.
    const order = round % 2 === 0 ? (['before', 'now'] as const) : (['now', 'before'] as const);
    for (const side of order) s[side].push(await run(roots[side], rules, inFlight));
  }
}
const rows = [...samples].map(([name, s]) => ({
  case: name,
  beforeUs: median(s.before),
  nowUs: median(s.now),
  ratio: median(s.now) / median(s.before),
  rounds: s,
}));
for (const r of rows) {
  console.log(
    `${r.case.padEnd(28)} before ${r.beforeUs.toFixed(2).padStart(6)} us  now ${r.nowUs.toFixed(2).padStart(6)} us  ` +
      `${r.ratio.toFixed(3)}x`,
  );
}
writeJson(fileURLToPath(new URL('../results/live-overhead.json', import.meta.url)), {
  date: new Date().toISOString(),
  node: process.version,
  rounds: ROUNDS,
  decisionsPerRun: DECISIONS,
  rows,
});
await server.stop();
