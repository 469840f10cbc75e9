/**
 * Several worker processes share one LLM provider's budget, requests and tokens per minute, through one
 * throttle on Redis, against a fake provider that answers 429 past its own limits. Each call is charged an
 * estimate and settled to what the provider says it used. Printed each second: what the provider served
 * and refused, and how many calls wait in the workers' queues; at the end, how much of the provider's
 * limits the fleet used.
 *
 *   tsx src/main.ts --workers 3 --seconds 60                 (the throttle's rules match the provider's)
 *   tsx src/main.ts --factor 2                               (set twice too high: 429s pause the fleet)
 *
 * --window-ms shortens the provider's minute (a test runs it at 3 s). Uses REDIS_URL, or starts a
 * throwaway redis-server when it is unset.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { redisForExample } from '@sluice/example-multi-node/redis-for-example';
import { startProvider } from './provider.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '60' },
    'window-ms': { type: 'string', default: '60000' },
    requests: { type: 'string', default: '600' },
    tokens: { type: 'string', default: '150000' },
    concurrency: { type: 'string', default: '8' },
    factor: { type: 'string', default: '1' },
  },
});
const workers = Number(values.workers);
const seconds = Number(values.seconds);
const windowMs = Number(values['window-ms']);
const requests = Number(values.requests);
const tokens = Number(values.tokens);
const factor = Number(values.factor);

const redisServer = await redisForExample();
const provider = await startProvider({ requests, tokens, windowMs, latencyMs: [20, 80] });
console.log(
  `${workers} workers, provider limits ${requests} requests and ${tokens} tokens per ${windowMs} ms, ` +
    `throttle rules x${factor}, ${seconds} s, Redis at ${redisServer.url}`,
);
console.log('second   served   refused (429)   queued');

const prefix = `llm-${process.pid}`;
const queued = new Map<number, number>();
const finished: Array<Promise<void>> = [];
const workerScript = fileURLToPath(new URL('./worker.ts', import.meta.url));
for (let w = 0; w < workers; w++) {
  const child = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', workerScript], {
    env: {
      ...process.env,
      REDIS_URL: redisServer.url,
      PROVIDER_URL: provider.url,
      PREFIX: prefix,
      REQUESTS: String(requests * factor),
      TOKENS: String(tokens * factor),
      WINDOW_MS: String(windowMs),
      SECONDS: String(seconds),
      CONCURRENCY: values.concurrency,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as { type: string; queued?: number };
    if (message.type === 'tick') queued.set(w, message.queued ?? 0);
  });
  finished.push(new Promise((resolve) => child.once('exit', () => resolve())));
}

let last = provider.stats();
let second = 0;
const perSecond = setInterval(() => {
  const now = provider.stats();
  second++;
  const waiting = [...queued.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${String(second).padStart(6)}   ${String(now.served - last.served).padStart(6)}   ${String(now.refused - last.refused).padStart(13)}   ${String(waiting).padStart(6)}`,
  );
  last = now;
}, 1_000);
await Promise.all(finished);
clearInterval(perSecond);

// What the provider could have let through from the first call's arrival to the last one's: a full window's
// worth at the start, then its refill.
const stats = provider.stats();
const allowance = (limit: number) => limit + (limit * stats.elapsedMs) / windowMs;
const summary = {
  served: stats.served,
  refused: stats.refused,
  requestsUsed: stats.served / allowance(requests),
  tokensUsed: stats.tokens / allowance(tokens),
  elapsedMs: Math.round(stats.elapsedMs),
};
console.log(
  `served ${summary.served}, refused ${summary.refused} (429), used ${(100 * summary.requestsUsed).toFixed(1)}% of the ` +
    `request limit and ${(100 * summary.tokensUsed).toFixed(1)}% of the token limit`,
);
console.log(`summary ${JSON.stringify(summary)}`);
await provider.close();
redisServer.stop();
