/**
 * N worker processes share one token bucket (1,000 per second, burst 1,000) through one Redis, in the mode
 * you choose, and the fleet's admissions are printed per second beside the limit and the Redis commands
 * each decision cost.
 *
 *   tsx src/main.ts --mode leased --nodes 4 --seconds 10     (exact | leased | divided; --share demand)
 *
 * Uses REDIS_URL, or starts a throwaway redis-server when it is unset.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { runFleet } from './fleet.js';
import { redisForExample } from './redis-for-example.js';
import type { Mode } from './worker-config.js';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'leased' },
    nodes: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '10' },
    share: { type: 'string', default: 'equal' },
  },
});
const mode = values.mode as Mode;
if (!['exact', 'leased', 'divided'].includes(mode))
  throw new Error(`--mode must be exact, leased or divided, got ${mode}`);
const nodes = Number(values.nodes);
const seconds = Number(values.seconds);
const RATE = 1_000;

const redisServer = await redisForExample();
const monitor = new Redis(redisServer.url);
const commandCalls = async () =>
  [...(await monitor.info('commandstats')).matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);

console.log(
  `${nodes} ${mode} nodes, one token bucket of ${RATE}/s (burst ${RATE}), ${seconds} s, Redis at ${redisServer.url}`,
);
console.log('second   admitted   limit   decisions   Redis commands / decision');
let second = { admitted: 0, decisions: 0 };
let lastCalls = await commandCalls();
let startAt = 0;
let printed = 0;
const timer = setInterval(async () => {
  if (startAt === 0 || Date.now() < startAt + (printed + 1) * 1000) return;
  printed++;
  const calls = await commandCalls();
  // Each INFO is itself a command: leave this monitor's own out.
  const perDecision = second.decisions === 0 ? 0 : (calls - lastCalls - 1) / second.decisions;
  const limit = printed === 1 ? 2 * RATE : RATE; // the first second also has the burst
  console.log(
    `${String(printed).padStart(6)} ${String(second.admitted).padStart(10)} ${String(limit).padStart(7)} ` +
      `${String(second.decisions).padStart(11)}   ${perDecision.toFixed(4)}`,
  );
  lastCalls = calls;
  second = { admitted: 0, decisions: 0 };
}, 50);

const result = await runFleet({
  nodes,
  mode,
  redisUrl: redisServer.url,
  rule: { kind: 'tokenBucket', capacity: RATE, refillPerSecond: RATE },
  durationMs: seconds * 1000,
  share: values.share as 'equal' | 'demand',
  onStart: (at) => {
    startAt = at;
  },
  onReport: (_node, report) => {
    if (report.type === 'tick') {
      second.admitted += report.admitted;
      second.decisions += report.decisions;
    }
  },
});
clearInterval(timer);
const admitted = result.nodes.reduce((s, n) => s + n.admitted, 0);
const decisions = result.nodes.reduce((s, n) => s + n.decisions, 0);
console.log(
  `total: ${admitted} admitted of ${RATE + RATE * seconds} allowed ` +
    `(${((100 * admitted) / (RATE + RATE * seconds)).toFixed(1)}%), ${decisions} decisions`,
);
monitor.disconnect();
redisServer.stop();
