/**
 * Redis killed under steady traffic, the way the README sets a store up (an ioredis client with default
 * options and no error listener of the user's). Before the fix: each probe's nudge started another reconnect
 * loop (attempts grew with the outage), ioredis printed "Unhandled error event" on every attempt, a probe
 * was a user's decision (about 12% of decisions waited out timeoutMs), and after close() and the user's own
 * disconnect() the extra loops kept reconnecting.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { leasedLimiter } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { spawnRedisServer } from '../harness/redis-server.js';

const OUTAGE_MS = 6_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Connection attempts per second, from the client's own 'connecting' events (one per attempt). */
function attemptCounter(client: Redis): { perSecond(fromMs: number, toMs: number): number; total(): number } {
  const at: number[] = [];
  client.on('connecting', () => at.push(performance.now()));
  return {
    perSecond: (from, to) => (at.filter((t) => t >= from && t < to).length * 1000) / (to - from),
    total: () => at.length,
  };
}

describe.each(['exact', 'leased'] as const)(`%s mode: Redis killed for ${OUTAGE_MS} ms under traffic`, (mode) => {
  it('attempts stay flat, decisions answer at once, nothing printed, nothing left after close', async () => {
    const server = await spawnRedisServer();
    const client = new Redis(server.url); // as in the README: no error listener of the user's
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const timeoutMs = 50;
    const store = mode === 'exact' ? redisStore({ redis: client, timeoutMs }) : undefined;
    const limiter =
      store !== undefined
        ? createLimiter({ algorithm: fixedWindow({ limit: 1_000_000, windowMs: 60_000 }), store, prefix: `reconnect-${mode}` })
        : leasedLimiter({ algorithm: fixedWindow({ limit: 1_000_000, windowMs: 60_000 }), redis: client, timeoutMs, prefix: 'reconnect-leased' });
    const attempts = attemptCounter(client);
    let stop = false;
    const latencies: number[] = [];
    let threw = 0;
    let killedAt = Number.POSITIVE_INFINITY;
    // Steady traffic: 4 callers, each deciding one key of 50 after another (1 ms apart).
    const callers = Array.from({ length: 4 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        const started = performance.now();
        try {
          await limiter.tryAcquire(`k${(i * 4 + c) % 50}`);
        } catch {
          threw++;
        }
        if (started > killedAt + 300) latencies.push(performance.now() - started);
        await sleep(1);
      }
    });
    try {
      await sleep(500);
      server.process?.kill('SIGKILL');
      killedAt = performance.now();
      await sleep(OUTAGE_MS);
      stop = true;
      await Promise.all(callers);
      const early = attempts.perSecond(killedAt + 1_000, killedAt + 3_000);
      const late = attempts.perSecond(killedAt + 4_000, killedAt + OUTAGE_MS);
      latencies.sort((a, b) => a - b);
      const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
      const slow = latencies.filter((ms) => ms >= timeoutMs).length / latencies.length;
      const unhandled = printed.mock.calls.filter((args) => String(args[0]).includes('Unhandled error event')).length;
      console.log(
        `${mode}: ${latencies.length} decisions during the outage, p99 ${p99.toFixed(2)} ms, ${(slow * 100).toFixed(2)}% waited timeoutMs; ` +
          `connection attempts ${early.toFixed(1)}/s (seconds 1-3) and ${late.toFixed(1)}/s (seconds 4-6); "Unhandled error event" printed ${unhandled} times`,
      );
      expect(threw).toBe(0);
      expect(unhandled).toBe(0);
      // The client's own schedule plus at most one nudge per 100 ms probe interval, not growing with time.
      expect(late).toBeLessThanOrEqual(15);
      expect(late).toBeLessThanOrEqual(early * 1.5 + 3);
      // During an outage the fail mode answers at once: no probe is a user's decision (before: p99 50 ms,
      // 1% of decisions waited out timeoutMs). Generous bounds for a loaded machine; the figures print above.
      expect(p99).toBeLessThan(10);
      expect(slow).toBeLessThan(0.005);
    } finally {
      stop = true;
      await Promise.all(callers);
      await limiter.close();
      await store?.close();
      client.disconnect();
      printed.mockRestore();
    }
    // After the user's own disconnect, the client makes no more attempts, even when Redis comes back.
    const afterClose = attempts.total();
    const again = await spawnRedisServer([], { port: server.port });
    await sleep(1_500);
    expect(attempts.total() - afterClose).toBe(0);
    // (ioredis leaves a client disconnected during its backoff in 'reconnecting', with no timer left.)
    expect(['end', 'reconnecting', 'close']).toContain(client.status);
    await again.stop();
    await server.stop();
  });
});
