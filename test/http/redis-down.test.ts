/**
 * A limiter whose Redis is down behind each framework: the request completes, as its failMode says,
 * within a bound only a hang would break.
 */
import { ManualClock, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { fastifyRateLimit } from '@sluice/core/http';
import { redisStore } from '@sluice/redis';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { frameworks, get, startServer } from './servers.js';

let redis: Redis;
beforeAll(async () => {
  // Nothing listens on this port: every connection attempt is refused, ioredis queues and retries.
  redis = new Redis({ host: '127.0.0.1', port: await freePort(), lazyConnect: false, retryStrategy: () => 100 });
  redis.on('error', () => {});
});
afterAll(() => redis.disconnect());

const expected = { open: 200, closed: 429, local: 200 } as const;

describe.each(frameworks)('a limiter whose Redis is down, on %s', (framework) => {
  it.each(['open', 'closed', 'local'] as const)(
    "failMode '%s': the request completes as the failMode says",
    async (failMode) => {
      const store = redisStore({ redis, failMode, timeoutMs: 50 });
      const limiter = createLimiter({
        rules: fixedWindow({ limit: 5, windowMs: 60_000 }),
        store,
        prefix: `http-down-${failMode}`,
      });
      const server = await startServer(framework, { limiter, key: () => 'k' } as never);
      try {
        const started = performance.now();
        const r = await get(server.url);
        const tookMs = performance.now() - started;
        expect(r.status).toBe(expected[failMode]);
        expect(tookMs).toBeLessThan(2_000); // deadline 50 ms; only a hang reaches this
      } finally {
        await server.close();
        await limiter.close();
        await store.close();
      }
    },
  );
});

describe('fastifyRateLimit plugin', () => {
  it('registered on the root, limits every route of the app', async () => {
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      store: memoryStore({ clock: new ManualClock(0) }),
    });
    const app = Fastify();
    await app.register(fastifyRateLimit, { limiter, key: () => 'everyone' });
    app.get('/a', async () => 'a');
    app.get('/b', async () => 'b');
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as { port: number };
      expect((await get(`http://127.0.0.1:${port}/a`)).status).toBe(200);
      const denied = await get(`http://127.0.0.1:${port}/b`);
      expect(denied.status).toBe(429);
      expect(denied.headers.get('ratelimit')).toBe('"fw-1-per-1m";r=0;t=60');
    } finally {
      await app.close();
    }
  });
});
