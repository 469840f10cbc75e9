/**
 * One node of the exactness test: hammers one hot key per algorithm with IN_FLIGHT concurrent callers until
 * START_AT + DURATION_MS, and prints the Redis decision time of every grant (JSON on stdout).
 */
import {
  type Algorithm,
  createLimiter,
  fixedWindow,
  gcra,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { type ClientKind, openClient, openClusterClient } from '../harness/clients.js';

const env = process.env;
const durationMs = Number(env.DURATION_MS);
const inFlight = Number(env.IN_FLIGHT);
const startAt = Number(env.START_AT);
const prefix = env.PREFIX as string;
const nodes = env.CLUSTER_NODES ? (JSON.parse(env.CLUSTER_NODES) as Array<{ host: string; port: number }>) : undefined;

export const EXACTNESS_RULES: Record<string, () => Algorithm | Algorithm[]> = {
  fixedWindow: () => fixedWindow({ limit: 1000, windowMs: 1000 }),
  slidingWindowLog: () => slidingWindowLog({ limit: 1000, windowMs: 1000 }),
  slidingWindowCounter: () => slidingWindowCounter({ limit: 1000, windowMs: 1000 }),
  tokenBucket: () => tokenBucket({ capacity: 1000, refillPerSecond: 1000 }),
  gcra: () => gcra({ permitsPerSecond: 1000, burst: 1000 }),
  // An interval that is not a whole number of ms (1000/900): any rounding that piled up would show here.
  gcra900: () => gcra({ permitsPerSecond: 900, burst: 900 }),
  // Two rules decided together in one script call: both bounds must hold on the same grants.
  policy: () => [
    fixedWindow({ limit: 1000, windowMs: 1000, name: 'fw' }),
    tokenBucket({ capacity: 1500, refillPerSecond: 900, name: 'tb' }),
  ],
  // A per-user rule and a global rule: on a Cluster their keys live in different slots ({hot}, {global}),
  // decided slot by slot with refunds when the second refuses.
  crossSlot: () => [
    fixedWindow({ limit: 1000, windowMs: 1000, name: 'user' }),
    tokenBucket({ capacity: 800, refillPerSecond: 700, name: 'global', scope: 'global' }),
  ],
};

// The client library the fleet runs on (CLIENT: ioredis by default; see test/harness/clients.ts).
const kind = (env.CLIENT ?? 'ioredis') as ClientKind;
const url = new URL(env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const opened = nodes
  ? await openClusterClient(kind, nodes)
  : await openClient(kind, { host: url.hostname, port: Number(url.port) });
const redis = opened.client;
const grants: Record<string, number[]> = {};
let decisions = 0;
let fallbacks = 0;
const store = redisStore({
  redis,
  failMode: 'closed', // a decision Redis did not make is a denial: never an over-admission
  timeoutMs: 5_000,
  onDecision: (e) => {
    decisions++;
    if (e.source === 'fallback') fallbacks++;
    if (!e.decision.allowed) return;
    (grants[e.prefix] ??= []).push(e.decidedAtMs);
    // A policy decided slot by slot: each rule's bound is checked on the times its own slot decided at.
    e.ruleDecidedAtMs?.forEach((t, r) => {
      (grants[`${e.prefix}#${r}`] ??= []).push(t);
    });
  },
});

const algorithms = (env.ALGORITHMS as string).split(',');
const limiters = algorithms.map((name) =>
  createLimiter({ rules: (EXACTNESS_RULES[name] as () => Algorithm)(), store, prefix: `${prefix}-${name}` }),
);
await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));
const end = Date.now() + durationMs;
await Promise.all(
  limiters.flatMap((limiter) =>
    Array.from({ length: inFlight }, async () => {
      while (Date.now() < end) {
        const d = await limiter.tryAcquire('hot');
        // A denied caller yields to I/O before asking again, as a real client would.
        if (!d.allowed) await new Promise((r) => setImmediate(r));
      }
    }),
  ),
);
await store.close();
await opened.close();
// On a line of its own behind a marker: a client library may log to stdout too (GLIDE's core does). Exit
// once it is flushed (a pipe is written asynchronously): a native client (GLIDE) may keep the loop alive.
process.stdout.write(`\nSLUICE-RESULT ${JSON.stringify({ grants, decisions, fallbacks })}\n`, () => process.exit(0));
