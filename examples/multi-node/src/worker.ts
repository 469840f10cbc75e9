/**
 * One node of the multi-node example (and of the hybrid tests and bench): one limiter in the chosen mode
 * against one Redis, one hot key, saturated or at a paced rate, reporting admissions as JSON lines.
 */
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import {
  type Algorithm,
  type Limiter,
  type Store,
  createLimiter,
  fixedWindow,
  observeSluice,
  tokenBucket,
} from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import type { RuleConfig, WorkerConfig, WorkerReport } from './worker-config.js';

const config = JSON.parse(process.env.SLUICE_WORKER ?? '') as WorkerConfig;
const report = (line: WorkerReport) => process.stdout.write(`${JSON.stringify(line)}\n`);
/** Wall-clock time with sub-ms precision, comparable across the fleet's processes. */
const wallNow = () => performance.timeOrigin + performance.now();

function rule(c: RuleConfig): Algorithm {
  return c.kind === 'tokenBucket'
    ? tokenBucket({ capacity: c.capacity, refillPerSecond: c.refillPerSecond })
    : fixedWindow({ limit: c.limit, windowMs: c.windowMs });
}

const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
redis.on('error', () => {});
let leased = 0;
let fallbacks = 0;

const countFallback = () => fallbacks++;

/** The mode is the store: the limiter below is the same in each. */
function storeFor(c: WorkerConfig): Store {
  if (c.mode === 'exact') {
    const exact = redisStore({ redis, nodeId: c.nodeId, failMode: 'closed', timeoutMs: 5_000 });
    exact.on('store-error', countFallback);
    return exact;
  }
  if (c.mode === 'leased') {
    const leasing = leasedStore({ redis, nodeId: c.nodeId, failMode: 'closed', timeoutMs: 5_000 });
    leasing.on('store-error', countFallback);
    leasing.on('lease', (e) => {
      leased += e.granted;
      report({ type: 'lease', granted: e.granted, held: e.held });
    });
    // A key too cold for a lease (the hot key's first requests) is decided exactly: permits taken centrally
    // too. Counted only when admissions are recorded (the tests): observing every decision costs throughput.
    if (c.recordTimes)
      observeSluice({
        decision: (e) => {
          if (e.source !== 'redis' || !e.decision.allowed) return;
          leased++;
          report({ type: 'lease', granted: 1, held: 0 });
        },
      });
    return leasing;
  }
  const dividing = dividedStore({
    redis,
    nodeId: c.nodeId,
    share: c.share ?? 'equal',
    heartbeatMs: c.heartbeatMs ?? 1_000,
  });
  dividing.on('store-error', countFallback);
  return dividing;
}

const store = storeFor(config);
const limiter: Limiter = createLimiter({ rules: rule(config.rule), store, prefix: config.prefix });
const close = async (): Promise<void> => {
  await limiter.close();
  await store.close();
};

let decisions = 0;
let admitted = 0;
let times: number[] = [];
let reported = { decisions: 0, admitted: 0 };
const admit = () => {
  admitted++;
  if (config.recordTimes) times.push(wallNow());
};
const flush = () => {
  if (decisions === reported.decisions) return;
  const tick = { decisions: decisions - reported.decisions, admitted: admitted - reported.admitted };
  report(config.recordTimes ? { type: 'tick', ...tick, times } : { type: 'tick', ...tick });
  reported = { decisions, admitted };
  times = [];
};
// Short report intervals: a worker killed with SIGKILL loses at most this much of its record.
const flusher = setInterval(flush, 20);

report({ type: 'ready' });
// The common start (wall-clock ms) comes on stdin once every worker is ready: a worker slow to start (tsx
// compiles on start) never misses the beginning of the run.
const lines = createInterface({ input: process.stdin });
const [startLine] = (await once(lines, 'line')) as [string];
lines.close();
const startAt = Number(startLine);
await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));
const end = startAt + config.durationMs;

if (config.offeredPerSecond === undefined) {
  await Promise.all(
    Array.from({ length: config.inFlight }, async () => {
      while (Date.now() < end) {
        decisions++;
        const d = await limiter.tryAcquire('hot');
        if (d.allowed) admit();
        // A denied caller yields to I/O before asking again, as a real client would.
        else await new Promise((r) => setImmediate(r));
      }
    }),
  );
} else {
  // Paced: every 10 ms, the requests due by now, each decided without waiting for the others.
  const rate = config.offeredPerSecond;
  let issued = 0;
  const inFlight = new Set<Promise<void>>();
  while (Date.now() < end) {
    const due = Math.floor((rate * (Date.now() - startAt)) / 1000);
    for (; issued < due; issued++) {
      decisions++;
      const p = limiter.tryAcquire('hot').then((d) => {
        if (d.allowed) admit();
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(inFlight);
}

clearInterval(flusher);
flush();
await close();
report({ type: 'done', decisions, admitted, leased, fallbacks });
redis.disconnect();
