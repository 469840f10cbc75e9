/**
 * What a throttle costs over the limiter it is built on, with a limit that never binds (the cost of the
 * queue, the pause check and the turn, not of waiting): calls started per second and, on Redis, script calls
 * and Redis CPU per started call, for `throttle.run` beside a bare `limiter.tryAcquire` of the same policy
 * (requests and tokens per minute, per-rule permits), 1 and 32 calls in flight, in interleaved rounds on one
 * fresh Redis (and on the memory store). Medians; writes bench/results/throttle.json.
 *
 * Run: pnpm --filter @sluice/bench bench:throttle (BENCH_ROUNDS=n for more rounds)
 */
import { fileURLToPath } from 'node:url';
import { type Limiter, createLimiter, memoryStore, throttle, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, redisCpuUs, scriptCalls, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = 3_000;
const HUGE = 1_000_000_000;
const server = await spawnRedisServer();
const redis = new Redis(server.url);
const monitor = new Redis(server.url);
let n = 0;

/** A policy that never binds: a request and 1,200 tokens per call. */
function policyOn(store: Parameters<typeof createLimiter>[0]['store']): Limiter {
  return createLimiter({
    rules: [
      tokenBucket({ name: 'rpm', capacity: HUGE, refillPerSecond: HUGE }),
      tokenBucket({ name: 'tpm', capacity: HUGE, refillPerSecond: HUGE }),
    ],
    store,
    prefix: `tb${++n}`,
  });
}
const permits = { rpm: 1, tpm: 1_200 };

/** `CALLS` calls, `inFlight` at a time, by `call`; calls per second, and Redis's cost per call. */
async function measure(inFlight: number, call: () => Promise<unknown>) {
  let next = 0;
  const worker = async () => {
    while (next++ < CALLS) await call();
  };
  const [cpu0, scripts0] = [await redisCpuUs(monitor), await scriptCalls(monitor)];
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - started) / 1000;
  const [cpu1, scripts1] = [await redisCpuUs(monitor), await scriptCalls(monitor)];
  return {
    perSecond: CALLS / seconds,
    redisUsPerCall: (cpu1 - cpu0) / CALLS,
    scriptsPerCall: (scripts1 - scripts0) / CALLS,
  };
}

type Sample = Awaited<ReturnType<typeof measure>>;
const cases = [
  ['redis', 1],
  ['redis', 32],
  ['memory', 1],
  ['memory', 32],
] as const;
const samples = new Map<string, { limiter: Sample[]; throttle: Sample[] }>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const [where, inFlight] of cases) {
    const name = `${where}, ${inFlight} in flight`;
    const s = samples.get(name) ?? { limiter: [], throttle: [] };
    samples.set(name, s);
    const sides = {
      limiter: async () => {
        const store = where === 'redis' ? redisStore({ redis }) : memoryStore();
        const limiter = policyOn(store);
        await limiter.ready();
        s.limiter.push(await measure(inFlight, () => limiter.tryAcquire('provider', { permits })));
        await limiter.close();
        await store.close();
      },
      throttle: async () => {
        const store = where === 'redis' ? redisStore({ redis }) : memoryStore();
        const limiter = policyOn(store);
        await limiter.ready();
        const calls = throttle({ limiter, key: 'provider' });
        s.throttle.push(await measure(inFlight, () => calls.run(() => undefined, { permits })));
        await calls.close();
        await limiter.close();
        await store.close();
      },
    };
    // Which side goes first alternates: a server warmed by one side favours the other.
    const order = round % 2 === 0 ? (['limiter', 'throttle'] as const) : (['throttle', 'limiter'] as const);
    for (const side of order) await sides[side]();
  }
}

const med = (xs: Sample[], field: keyof Sample) => median(xs.map((x) => x[field]));
const rows = [...samples].map(([name, s]) => ({
  case: name,
  limiterPerSecond: med(s.limiter, 'perSecond'),
  throttlePerSecond: med(s.throttle, 'perSecond'),
  limiterScriptsPerCall: med(s.limiter, 'scriptsPerCall'),
  throttleScriptsPerCall: med(s.throttle, 'scriptsPerCall'),
  limiterRedisUsPerCall: med(s.limiter, 'redisUsPerCall'),
  throttleRedisUsPerCall: med(s.throttle, 'redisUsPerCall'),
}));
for (const r of rows) {
  console.log(
    `${r.case.padEnd(22)} calls/s limiter ${r.limiterPerSecond.toFixed(0).padStart(7)} throttle ` +
      `${r.throttlePerSecond.toFixed(0).padStart(7)}  scripts/call ${r.limiterScriptsPerCall.toFixed(2)} -> ` +
      `${r.throttleScriptsPerCall.toFixed(2)}  Redis us/call ${r.limiterRedisUsPerCall.toFixed(1)} -> ` +
      `${r.throttleRedisUsPerCall.toFixed(1)}`,
  );
}
writeJson(fileURLToPath(new URL('../results/throttle.json', import.meta.url)), {
  what: 'throttle.run vs limiter.tryAcquire of one never-binding policy ({ rpm: 1, tpm: 1200 } per call): medians',
  rounds: ROUNDS,
  callsPerRound: CALLS,
  rows,
});
monitor.disconnect();
redis.disconnect();
await server.stop();
