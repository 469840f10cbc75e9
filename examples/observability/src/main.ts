/**
 * A small fleet on one Redis: --nodes nodes in each mode (exact, leased, divided), each mode one fleet-wide
 * limit of 20 requests per client per minute, each node serving its sluice metrics in the Prometheus text
 * format on /metrics. The demo sends a few clients' requests through every node, prints the sluice series
 * each node exposes, and keeps running for you to scrape (Ctrl-C stops it; --once stops after printing).
 *
 *   tsx src/main.ts [--nodes 2] [--once]
 *
 * Uses REDIS_URL, or starts a throwaway redis-server when it is unset.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { redisForExample } from '@sluice/example-multi-node/redis-for-example';

const { values } = parseArgs({
  options: { once: { type: 'boolean', default: false }, nodes: { type: 'string', default: '2' } },
});
const perMode = Number(values.nodes);
if (!Number.isInteger(perMode) || perMode < 1 || perMode > 8)
  throw new Error(`--nodes must be an integer in 1..8, got ${values.nodes}`);
const redis = await redisForExample();
const nodeScript = fileURLToPath(new URL('./node.ts', import.meta.url));
const children: ChildProcess[] = [];

/** Starts one node and resolves with its URL once it listens. */
function startNode(mode: string, n: number): Promise<string> {
  const env = { ...process.env, MODE: mode, NODE_ID: `${mode}-${n}`, REDIS_URL: redis.url, PORT: '0' };
  const child = spawn(process.execPath, [...process.execArgv, nodeScript], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = out.match(/listening on (http:\/\/[\d.:]+)/);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`the ${mode} node exited (${code}) before listening`)));
  });
}

const stopAll = () => {
  for (const child of children) child.kill('SIGTERM');
  redis.stop();
};
process.once('SIGINT', () => {
  stopAll();
  process.exit(0);
});

const modes = ['exact', 'leased', 'divided'].flatMap((mode) =>
  Array.from({ length: perMode }, (_, n) => ({ mode, n })),
);
const nodes = await Promise.all(modes.map(async ({ mode, n }) => ({ mode, url: await startNode(mode, n) })));
// Divided nodes learn of each other through heartbeats (every 200 ms here) before they split the limit.
await new Promise((r) => setTimeout(r, 1_000));
// 30 requests from each of three clients through every node: each mode's fleet admits about 20 per client.
for (const { url } of nodes) {
  for (const client of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
    for (let i = 0; i < 30; i++) await (await fetch(url, { headers: { 'x-forwarded-for': client } })).arrayBuffer();
  }
}
for (const { mode, url } of nodes) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const series = text
    .split('\n')
    .filter((line) => /^sluice_(decisions|store_degraded|lease_permits|divided_share)/.test(line));
  console.log(`\n${mode} node, ${url}/metrics:\n${series.join('\n')}`);
}
if (values.once) stopAll();
else console.log('\nnodes keep running: scrape them, or Ctrl-C');
