/**
 * What a calendar window costs beside the fixed window it generalises, in interleaved rounds: memory-store
 * decisions per second on one hot key and on 10,000 keys (a window's bounds are computed once per window and
 * kept, so a decision in a known window computes nothing), the cost of a decision that lands in a new window
 * (the bounds computed: offsets, civil dates), and on one fresh Redis the redis-server CPU per decision (lone
 * calls and 32 in flight, batched) for fixedWindow (a day), calendarWindow in UTC and Europe/Berlin (a yearly
 * rule) and in America/Sao_Paulo (the largest common zone table: 81 numbers travel with every call). Also the
 * time to read a zone from Intl, once per zone per process. Medians; writes bench/results/calendar.json.
 *
 * Run: pnpm --filter @sluice/bench bench:calendar (BENCH_ROUNDS=n for more rounds)
 */
import { fileURLToPath } from 'node:url';
import { type Algorithm, ManualClock, calendarWindow, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { median, redisCpuUs, writeJson } from './harness.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HUGE = 1_000_000_000;
const DAY = 86_400_000;

/** Zone reads first, each in a process that has read no zone yet but this one's predecessors. */
const zoneReads: Record<string, number> = {};
for (const timeZone of ['Europe/Berlin', 'America/New_York', 'America/Sao_Paulo', 'Asia/Kolkata']) {
  const started = performance.now();
  calendarWindow({ limit: 1, period: 'day', timeZone });
  zoneReads[timeZone] = performance.now() - started;
}

const subjects: Record<string, () => Algorithm> = {
  'fixedWindow (a day)': () => fixedWindow({ limit: HUGE, windowMs: DAY, name: 'w' }),
  'calendarWindow day, UTC': () => calendarWindow({ limit: HUGE, period: 'day', name: 'w' }),
  'calendarWindow month, Europe/Berlin': () =>
    calendarWindow({ limit: HUGE, period: 'month', timeZone: 'Europe/Berlin', name: 'w' }),
  'calendarWindow day, America/Sao_Paulo': () =>
    calendarWindow({ limit: HUGE, period: 'day', timeZone: 'America/Sao_Paulo', name: 'w' }),
};
const keys = Array.from({ length: 10_000 }, (_, i) => `user:${i}`);

/** Memory-store decisions per second: `decisions` on `keyOf(i)`, the clock moved by `stepMs` before each. */
async function memoryRate(rule: Algorithm, decisions: number, keyOf: (i: number) => string, stepMs: number) {
  const clock = new ManualClock(Date.UTC(2026, 10, 27, 12));
  const limiter = createLimiter({ rules: rule, store: memoryStore({ clock, maxKeys: 20_000 }), prefix: 'b' });
  for (let i = 0; i < 2_000; i++) limiter.tryAcquire(keyOf(i));
  const started = performance.now();
  for (let i = 0; i < decisions; i++) {
    if (stepMs > 0) clock.advance(stepMs);
    await limiter.tryAcquire(keyOf(i));
  }
  const perSecond = decisions / ((performance.now() - started) / 1000);
  await limiter.close();
  return perSecond;
}

const server = await spawnRedisServer();
const redis = new Redis(server.url);
const monitor = new Redis(server.url);
let prefixes = 0;

/** redis-server CPU per decision (us) for `rule`: 4,000 decisions over 10,000 keys, `inFlight` at a time. */
async function redisCpu(rule: Algorithm, inFlight: number) {
  const store = redisStore({ redis });
  const limiter = createLimiter({ rules: rule, store, prefix: `cal${++prefixes}` });
  await limiter.ready();
  await limiter.tryAcquire('warm-up');
  const calls = 4_000;
  let next = 0;
  const worker = async () => {
    while (next < calls) await limiter.tryAcquire(keys[next++ % keys.length] as string);
  };
  const before = await redisCpuUs(monitor);
  await Promise.all(Array.from({ length: inFlight }, worker));
  const us = ((await redisCpuUs(monitor)) - before) / calls;
  await limiter.close();
  await store.close();
  return us;
}

type Figures = Record<string, number[]>;
const figures: Record<string, Figures> = {};
const add = (subject: string, what: string, value: number) => {
  const f = (figures[subject] ??= {});
  (f[what] ??= []).push(value);
};
for (let round = 1; round <= ROUNDS; round++) {
  // Which subject goes first turns each round: a warmed process or server favours the later ones.
  const names = Object.keys(subjects);
  const order = [...names.slice(round % names.length), ...names.slice(0, round % names.length)];
  for (const name of order) {
    const make = subjects[name] as () => Algorithm;
    add(name, 'memory hot key /s', await memoryRate(make(), 200_000, () => 'hot', 0));
    add(name, 'memory 10k keys /s', await memoryRate(make(), 200_000, (i) => keys[i % keys.length] as string, 0));
    add(name, 'memory, a new window each decision /s', await memoryRate(make(), 20_000, () => 'hot', DAY + 1));
    add(name, 'Redis CPU us/decision, lone', await redisCpu(make(), 1));
    add(name, 'Redis CPU us/decision, 32 in flight', await redisCpu(make(), 32));
  }
}

const rows = Object.entries(figures).map(([subject, f]) => ({
  subject,
  ...Object.fromEntries(Object.entries(f).map(([what, xs]) => [what, Number(median(xs).toFixed(2))])),
}));
console.table(rows);
console.table(Object.entries(zoneReads).map(([zone, ms]) => ({ zone, 'read from Intl, ms': Number(ms.toFixed(1)) })));
writeJson(fileURLToPath(new URL('../results/calendar.json', import.meta.url)), {
  what: 'calendarWindow beside fixedWindow: memory decisions per second, Redis CPU per decision; medians of interleaved rounds',
  rounds: ROUNDS,
  rows,
  zoneReadMs: zoneReads,
});
monitor.disconnect();
redis.disconnect();
await server.stop();
