/**
 * Leased mode's RateLimit headers describe the client's allowance, not this node's batch: a new user saw
 * `r=31` with 200 of 200 available (the node had leased 31). `remaining` is what this node holds plus what
 * the central state had left at its latest lease.
 */
import { fixedWindow } from '@sluice/core';
import { leasedLimiterOn } from '../harness/hybrid.js';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { type TestServer, get, startServer } from '../http/servers.js';

const testRedis = useTestRedis();
const closers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c.close();
});

describe('leased mode headers', () => {
  it("tell the client the fleet's allowance, as this node knows it", async () => {
    const limiter = leasedLimiterOn({
      rules: fixedWindow({ limit: 200, windowMs: 600_000, name: 'api' }),
      redis: testRedis().redis,
      prefix: `leased-headers-${process.pid}`,
    });
    closers.push(limiter);
    const server: TestServer = await startServer('node:http', { limiter, key: () => 'k' } as never);
    closers.push(server);
    const remaining: number[] = [];
    for (let i = 0; i < 40; i++) {
      const reply = await get(server.url);
      expect(reply.status).toBe(200);
      remaining.push(Number(/r=(\d+)/.exec(reply.headers.get('ratelimit') ?? '')?.[1]));
    }
    // One node alone: its count is the fleet's, exactly 200 - n after n requests, however it leases.
    expect(remaining).toEqual(Array.from({ length: 40 }, (_, i) => 199 - i));
  });
});
