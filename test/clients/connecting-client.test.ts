/**
 * A node-redis client is accepted while it connects: `client.connect()` called and not awaited, as CommonJS
 * code without top-level await writes it. Decisions asked meanwhile wait for the connection (node-redis queues
 * them), the start-up check passes once it is up, and a client never opened is refused with what to do.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();

describe('a node-redis client that is still connecting', () => {
  it('is accepted: ready() and decisions wait for the connection', async () => {
    const client = createClient({ url: testRedis().server.url });
    const connecting = client.connect(); // not awaited, as in CommonJS
    expect(client.isReady).toBe(false);
    const store = redisStore({ redis: client, timeoutMs: 2_000 });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      store,
      prefix: `connecting-${process.pid}`,
    });
    const first = limiter.tryAcquire('k');
    await store.ready();
    expect(await first).toMatchObject({ allowed: true });
    expect((await limiter.tryAcquire('k')).source).toBeUndefined();
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    await limiter.close();
    await store.close();
    await connecting;
    await client.close();
  });

  it('a client never opened is refused, saying to call connect() (awaiting it is not needed)', () => {
    const client = createClient({ url: testRedis().server.url });
    expect(() => redisStore({ redis: client })).toThrow(/call client\.connect\(\) first \(it need not be awaited/);
  });
});
