/**
 * A short soak: exact and leased mode at full speed side by side on one Redis. Heap after GC and Redis
 * used_memory stay flat; the event-loop delay p99 is reported. SOAK_SECONDS long (10 in the main suite,
 * 60 under `npm run test:faults`).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { type Limiter, createLimiter, tokenBucket } from '@sluice/core';
import { leasedLimiterOn } from '../harness/hybrid.js';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { spawnRedisServer } from '../harness/redis-server.js';
import { heapAfterGc } from './gc.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 10);
const MB = 1024 * 1024;
const KEYS = 1_000;

describe('soak', () => {
  it(`exact and leased at full speed for ${SECONDS} s: heap and Redis memory flat`, async () => {
    const server = await spawnRedisServer();
    const exactClient = new Redis(server.url);
    const leasedClient = new Redis(server.url);
    const admin = new Redis(server.url);
    const store = redisStore({ redis: exactClient });
    const algorithm = tokenBucket({ capacity: 100, refillPerSecond: 1_000 });
    const limiters: Record<string, Limiter> = {
      exact: createLimiter({ rules: algorithm, store, prefix: 'soak-exact' }),
      leased: leasedLimiterOn({ rules: algorithm, redis: leasedClient, prefix: 'soak-leased' }),
    };
    const decisions: Record<string, number> = { exact: 0, leased: 0 };
    const delay = monitorEventLoopDelay({ resolution: 10 });
    const samples: { at: number; heapMb: number; redisMb: number }[] = [];
    const end = performance.now() + SECONDS * 1_000;
    let running = true;
    const traffic = Object.entries(limiters).flatMap(([mode, limiter]) =>
      Array.from({ length: 64 }, async (_, c) => {
        for (let n = 0, i = c; running; n++, i += 64) {
          await limiter.tryAcquire(`k${i % KEYS}`);
          decisions[mode] = (decisions[mode] as number) + 1;
          // Leased decisions resolve without I/O: yield now and then so both modes (and timers) get turns.
          if (n % 8 === 7) await new Promise((r) => setImmediate(r));
        }
      }),
    );
    const sample = async () => {
      const redisBytes = Number((await admin.info('memory')).match(/used_memory:(\d+)/)?.[1]);
      samples.push({
        at: Math.round(SECONDS - (end - performance.now()) / 1000),
        heapMb: Number((heapAfterGc() / MB).toFixed(1)),
        redisMb: Number((redisBytes / MB).toFixed(2)),
      });
    };
    try {
      delay.enable();
      // The first sample after a warm-up second: JIT, script cache and connection buffers settle first.
      await new Promise((r) => setTimeout(r, 1_000));
      while (performance.now() < end) {
        await sample();
        await new Promise((r) => setTimeout(r, Math.min(SECONDS * 100, 5_000)));
      }
      await sample();
    } finally {
      running = false;
      delay.disable();
      await Promise.all(traffic);
      await Promise.all(Object.values(limiters).map((l) => l.close()));
      await store.close();
      for (const c of [exactClient, leasedClient, admin]) c.disconnect();
      await server.stop();
    }
    const first = samples[0] as (typeof samples)[number];
    const last = samples.at(-1) as (typeof samples)[number];
    console.table(samples);
    console.table([
      {
        seconds: SECONDS,
        'exact decisions/s': Math.round((decisions.exact as number) / SECONDS),
        'leased decisions/s': Math.round((decisions.leased as number) / SECONDS),
        'heap growth (MB)': Number((last.heapMb - first.heapMb).toFixed(1)),
        'Redis used_memory growth (MB)': Number((last.redisMb - first.redisMb).toFixed(2)),
        'event-loop delay p99 (ms)': Number((delay.percentile(99) / 1e6).toFixed(1)),
      },
    ]);
    expect(last.heapMb - first.heapMb).toBeLessThan(16);
    expect(last.redisMb - first.redisMb).toBeLessThan(8);
  });
});
