/**
 * One node of the observability example: an HTTP API limited per client address, in the mode MODE
 * (exact | leased | divided) on the Redis at REDIS_URL, with OpenTelemetry metrics for every limiter in
 * the process, served in the Prometheus text format on GET /metrics (never rate limited). HEARTBEAT_MS sets a
 * divided node's heartbeat (default 200).
 *
 *   MODE=leased REDIS_URL=redis://127.0.0.1:6379 PORT=3000 tsx src/node.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { type Limiter, type Store, createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { byIp, rateLimit } from '@sluice/core/http';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { instrumentSluice } from '@sluice/otel';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const mode = process.env.MODE ?? 'exact';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const nodeId = process.env.NODE_ID ?? `${mode}-${process.pid}`;

// The exporter is a reader of this provider; with preventServerStart it serves /metrics on our own server.
const exporter = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [exporter] });
instrumentSluice({ meterProvider });

const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
redis.on('error', () => {}); // outages show as sluice.store.degraded, not as log spam

// 20 requests per client address per minute, shared by the fleet however it is enforced.
const rule = { limit: 20, windowMs: 60_000, name: 'per-client' };
// The mode is the store: one line, the limiter is the same in each.
function storeFor(mode: string): Store {
  if (mode === 'exact') return redisStore({ redis, nodeId });
  if (mode === 'leased') return leasedStore({ redis, nodeId });
  // HEARTBEAT_MS: a node silent for 3 heartbeats is taken for gone and its share handed out (a busy test
  // machine can stall a process that long, so the test gives it a second).
  if (mode === 'divided') return dividedStore({ redis, nodeId, heartbeatMs: Number(process.env.HEARTBEAT_MS ?? 200) });
  throw new Error(`MODE must be exact, leased or divided, got ${mode}`);
}
const store = storeFor(mode);
// Leased mode leases from a bucket; the window modes count a fixed window.
const rules =
  mode === 'leased' ? tokenBucket({ capacity: 20, refillPerSecond: 2, name: 'per-client' }) : fixedWindow(rule);
const limiter: Limiter = createLimiter({ rules, store, prefix: `api-${mode}` });

// Behind one proxy: the client is the last X-Forwarded-For address (the demo sends a few clients this way).
const limit = rateLimit({ limiter, key: byIp({ trustProxy: 1 }) });
const server = createServer((req, res) => {
  if (req.url === '/metrics') return exporter.getMetricsRequestHandler(req, res);
  limit(req, res, () => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ node: nodeId, mode }));
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`${mode} node listening on http://127.0.0.1:${port} (metrics on /metrics)`);
});

const stop = async () => {
  server.close();
  await limiter.close();
  await store.close();
  await meterProvider.shutdown();
  redis.disconnect();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
