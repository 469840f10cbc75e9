/**
 * What the default per-decision deadline (timeoutMs) should be: exact decisions on a healthy local
 * redis-server, with 0, 1 and 3 busy loops per core beside them (idle, loaded, overloaded), at 1 and 16 in flight;
 * every latency recorded with a deadline far out of the way, then the share that each candidate deadline would
 * have sent to the fail mode. A healthy Redis should (almost) never trip the default.
 *   node --conditions=sluice-source --import tsx bench/src/deadline.bench.ts
 * Writes bench/results/deadline.json. DEADLINE_SECONDS sets each configuration's length (default 10).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { writeJson } from './harness.js';

const SECONDS = Number(process.env.DEADLINE_SECONDS ?? 10);
const CANDIDATES = [25, 50, 100, 150, 200, 250, 500];

const server = await spawnRedisServer();
const redis = new Redis(server.url);
const store = redisStore({ redis, timeoutMs: 60_000 });
const limiter = createLimiter({
  rules: fixedWindow({ limit: 1_000_000_000, windowMs: 60_000 }),
  store,
  prefix: 'deadline-bench',
});

/** `perCore` busy loops per core beside the bench (0: an idle machine). */
function hogs(perCore: number): ChildProcess[] {
  return Array.from({ length: perCore * availableParallelism() }, () =>
    spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }),
  );
}

/** Every decision's latency (ms) for SECONDS, `inFlight` callers each deciding one of 10,000 keys after another. */
async function run(inFlight: number): Promise<number[]> {
  const latencies: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, c) => {
      for (let i = c; performance.now() < until; i += inFlight) {
        const started = performance.now();
        await limiter.tryAcquire(`k${i % 10_000}`);
        latencies.push(performance.now() - started);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
const rows = [];
for (const loaded of [0, 1, 3]) {
  for (const inFlight of [1, 16]) {
    const busy = hogs(loaded);
    const latencies = await run(inFlight);
    for (const hog of busy) hog.kill('SIGKILL');
    const over = Object.fromEntries(
      CANDIDATES.map((ms) => [ms, latencies.filter((l) => l >= ms).length / latencies.length]),
    );
    const row = {
      loaded,
      inFlight,
      decisions: latencies.length,
      p50: at(latencies, 0.5),
      p99: at(latencies, 0.99),
      p999: at(latencies, 0.999),
      p9999: at(latencies, 0.9999),
      max: latencies.at(-1) ?? 0,
      over,
    };
    rows.push(row);
    console.log(
      `${loaded} busy loops per core, ${String(inFlight).padStart(2)} in flight: ${row.decisions} decisions, p50 ` +
        `${row.p50.toFixed(2)} ms, p99 ${row.p99.toFixed(2)}, p99.9 ${row.p999.toFixed(2)}, p99.99 ` +
        `${row.p9999.toFixed(2)}, max ${row.max.toFixed(1)}; over ` +
        CANDIDATES.map((ms) => `${ms} ms: ${((over[ms] ?? 0) * 100).toFixed(3)}%`).join(', '),
    );
  }
}
writeJson(fileURLToPath(new URL('../results/deadline.json', import.meta.url)), {
  node: process.version,
  cpu: `${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`,
  secondsPerConfiguration: SECONDS,
  rows,
});
await limiter.close();
await store.close();
redis.disconnect();
await server.stop();
