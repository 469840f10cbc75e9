/**
 * Runs one fault against every mode x failMode at once (each case its own ioredis client, limiter and key
 * prefix, all on the same failing server), and measures what callers saw.
 */
import { type Limiter, createLimiter, tokenBucket } from '@sluice/core';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { type FailMode, redisStore } from '@sluice/redis';
import type { Cluster, Redis } from 'ioredis';

type RedisClient = Redis | Cluster;
import { bucketIntervalsOver } from '../redis/over-admission.js';
import { type ClientKind, openClient, openClusterClient } from '../harness/clients.js';
import type { Fault, FaultRun } from './faults.js';

export interface ModeCase {
  readonly mode: 'exact' | 'leased' | 'divided';
  /** Divided mode has none: it keeps its last share. */
  readonly failMode: FailMode | undefined;
}

export const MODE_CASES: readonly ModeCase[] = [
  ...(['local', 'open', 'closed'] as const).map((failMode) => ({ mode: 'exact' as const, failMode })),
  ...(['local', 'open', 'closed'] as const).map((failMode) => ({ mode: 'leased' as const, failMode })),
  { mode: 'divided', failMode: undefined },
];

export const TIMEOUT_MS = 50;
const CAPACITY = 20;
const RATE = 50; // per second
const KEYS = ['a', 'b', 'c', 'd'];
const CALLERS = 4;
/** Traffic goes on this long after Redis is healthy again. */
const AFTER_HEAL_MS = 2_000;

export interface FaultRow {
  readonly fault: string;
  readonly client: ClientKind;
  readonly mode: string;
  readonly failMode: string;
  readonly attempted: number;
  readonly threw: number;
  readonly worstLatencyMs: number;
  /** Exact mode only: grants Redis decided beyond the bucket's bound (null where not measured). */
  readonly overAdmissions: number | null;
  /**
   * From healthy again to the first decision served by Redis after the fault's fallback: the last one that
   * began before healing (or the first after it, when healing itself broke connections), 0 when the mode
   * never left Redis or was back before the harness, polling, saw Redis healthy (a Cluster client can see a
   * promoted replica first).
   */
  readonly recoveryMs: number;
  /**
   * Fallbacks that began after the mode was back: short new outages of their own (a busy machine stalling
   * past the 50 ms deadline), counted apart from recovery.
   */
  readonly laterBlips: number;
  readonly fellBack: boolean;
}

interface Probe {
  limiter: Limiter;
  readonly client: RedisClient;
  /** performance.now() of every Redis-served decision (exact), lease (leased) or recovered heartbeat. */
  readonly servedAt: number[];
  readonly redisGrants: Map<string, number[]>;
  /** performance.now() of every change from Redis to the fallback (store-error). */
  readonly fallbacks: number[];
  close: () => Promise<void>;
}

function makeProbe(c: ModeCase, client: RedisClient, closeClient: () => Promise<void>, prefix: string): Probe {
  const probe: Probe = {
    client,
    servedAt: [],
    redisGrants: new Map(),
    fallbacks: [],
    limiter: undefined as unknown as Limiter,
    close: async () => {},
  };
  const algorithm = tokenBucket({ capacity: CAPACITY, refillPerSecond: RATE });
  if (c.mode === 'exact') {
    const store = redisStore({
      redis: client,
      failMode: c.failMode,
      timeoutMs: TIMEOUT_MS,
      onDecision: (e) => {
        if (e.source !== 'redis') return;
        probe.servedAt.push(performance.now());
        if (e.decision.allowed) {
          const times = probe.redisGrants.get(e.key) ?? [];
          times.push(e.decidedAtMs);
          probe.redisGrants.set(e.key, times);
        }
      },
    });
    store.on('store-error', () => probe.fallbacks.push(performance.now()));
    const limiter = createLimiter({ rules: algorithm, store, prefix });
    probe.limiter = limiter;
    probe.close = async () => {
      await limiter.close();
      await store.close();
      await closeClient();
    };
    return probe;
  }
  if (c.mode === 'leased') {
    const limiter = leasedLimiterOn({
      rules: algorithm,
      redis: client,
      prefix,
      failMode: c.failMode,
      timeoutMs: TIMEOUT_MS,
    });
    limiter.store.on('lease', () => probe.servedAt.push(performance.now()));
    limiter.store.on('store-error', () => probe.fallbacks.push(performance.now()));
    probe.limiter = limiter;
    probe.close = async () => {
      await limiter.close();
      await closeClient();
    };
    return probe;
  }
  const limiter = dividedLimiterOn({ rules: algorithm, redis: client, prefix, heartbeatMs: 200 });
  limiter.store.on('store-error', () => probe.fallbacks.push(performance.now()));
  limiter.store.on('store-recovered', () => probe.servedAt.push(performance.now()));
  probe.limiter = limiter;
  probe.close = async () => {
    await limiter.close();
    await closeClient();
  };
  return probe;
}

/** Callers asking in a loop until `stop()`: counts, failures and the slowest answer. */
function drive(limiter: Limiter) {
  let running = true;
  const stats = { attempted: 0, threw: 0, worstMs: 0 };
  const callers = Array.from({ length: CALLERS }, async (_, i) => {
    for (let n = i; running; n++) {
      const key = KEYS[n % KEYS.length] as string;
      const started = performance.now();
      stats.attempted++;
      try {
        await limiter.tryAcquire(key);
      } catch {
        stats.threw++;
      }
      stats.worstMs = Math.max(stats.worstMs, performance.now() - started);
      await new Promise((r) => setTimeout(r, 2));
    }
  });
  return {
    stats,
    async stop() {
      running = false;
      await Promise.all(callers);
    },
  };
}

/** A client of `kind` for one mode case: ioredis as the fault makes it, another library at the fault's address. */
async function clientFor(
  run: FaultRun,
  kind: ClientKind,
): Promise<{ client: RedisClient; close: () => Promise<void> }> {
  if (kind === 'ioredis') {
    const client = run.client();
    return { client, close: async () => client.disconnect() };
  }
  const address = run.address;
  if (address === undefined) throw new Error(`this fault cannot run on ${kind}: its clients must connect when made`);
  const opened = 'nodes' in address ? await openClusterClient(kind, address.nodes) : await openClient(kind, address);
  return { client: opened.client as unknown as RedisClient, close: () => opened.close() };
}

export async function runFault(fault: Fault, kind: ClientKind = 'ioredis'): Promise<FaultRow[]> {
  const run = await fault.setup();
  const prefix = `faults-${kind}-${Date.now()}`;
  const clients = await Promise.all(MODE_CASES.map(() => clientFor(run, kind)));
  const probes = MODE_CASES.map((c, i) =>
    makeProbe(
      c,
      (clients[i] as { client: RedisClient }).client,
      (clients[i] as { close: () => Promise<void> }).close,
      `${prefix}-${i}`,
    ),
  );
  const drivers = probes.map((p) => drive(p.limiter));
  let healedAt: number;
  try {
    healedAt = await run.inject();
    await new Promise((r) => setTimeout(r, AFTER_HEAL_MS));
  } finally {
    await Promise.all(drivers.map((d) => d.stop()));
  }
  await Promise.all(probes.map((p) => p.close()));
  await run.teardown();
  return MODE_CASES.map((c, i) => {
    const probe = probes[i] as Probe;
    const { stats } = drivers[i] as ReturnType<typeof drive>;
    const before = probe.fallbacks.filter((t) => t <= healedAt);
    const fellBackAt = before.length > 0 ? Math.max(...before) : probe.fallbacks[0];
    const back = fellBackAt === undefined ? undefined : probe.servedAt.find((t) => t > fellBackAt);
    let overAdmissions: number | null = null;
    if (c.mode === 'exact') {
      overAdmissions = 0;
      for (const times of probe.redisGrants.values()) {
        overAdmissions += bucketIntervalsOver(
          [...times].sort((a, b) => a - b),
          CAPACITY,
          RATE / 1_000,
        ).over;
      }
    }
    return {
      fault: fault.name,
      client: kind,
      mode: c.mode,
      failMode: c.failMode ?? '(keeps its share)',
      attempted: stats.attempted,
      threw: stats.threw,
      worstLatencyMs: Number(stats.worstMs.toFixed(1)),
      overAdmissions,
      recoveryMs:
        fellBackAt === undefined
          ? 0
          : back === undefined
            ? Number.POSITIVE_INFINITY
            : Number(Math.max(0, back - healedAt).toFixed(0)),
      laterBlips: back === undefined ? 0 : probe.fallbacks.filter((t) => t > back).length,
      fellBack: fellBackAt !== undefined,
    };
  });
}
