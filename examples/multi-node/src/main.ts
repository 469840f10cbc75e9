/**
 * N worker processes share one token bucket (1,000 per second, burst 1,000) through one Redis, in the mode
 * you choose, and the fleet's admissions are printed per second beside the limit, the bound the mode keeps
 * for one second, and the Redis commands each decision cost.
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

// What the fleet may admit in one second beyond the bucket's own C + R x T: exact mode nothing; leased mode what
// the nodes hold from leases taken earlier (N x B, each batch B at most capacity / (4 x nodes), so at most
// capacity / 4); divided mode is approximate (each node enforces its share of the limit).
const heldByNodes = mode === 'leased' ? Math.floor(RATE / 4) : 0;
console.log(
  `${nodes} ${mode} nodes, one token bucket of ${RATE}/s (burst ${RATE}), ${seconds} s, Redis at ${redisServer.url}`,
);
console.log(
  mode === 'leased'
    ? `limit: the bucket's C + R x T for the second (the first has the burst). Leased mode never takes more than that\n` +
        `from Redis, but a node may spend in one second a batch it leased in the one before: one second's bound is\n` +
        `limit + N x B (B, a node's largest batch, is capacity / (4 x nodes): ${heldByNodes} across the fleet), and over the\n` +
        'whole run the total never passes C + R x T.'
    : mode === 'divided'
      ? 'limit: C + R x T for the second. Divided mode is approximate: each node enforces its share of the limit.'
      : 'limit: C + R x T for the second (the first has the burst). Exact mode decides every request on Redis.',
);
console.log('second   admitted   limit   bound   decisions   Redis commands / decision');
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
  const bound = mode === 'divided' ? '~' : String(limit + heldByNodes);
  console.log(
    `${String(printed).padStart(6)} ${String(second.admitted).padStart(10)} ${String(limit).padStart(7)} ` +
      `${bound.padStart(7)} ` +
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
  `total: ${admitted} admitted of ${RATE + RATE * seconds} allowed (C + R x T over the run) ` +
    `(${((100 * admitted) / (RATE + RATE * seconds)).toFixed(1)}%), ${decisions} decisions`,
);
monitor.disconnect();
redisServer.stop();
