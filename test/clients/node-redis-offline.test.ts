/**
 * node-redis queues a command asked while its connection is down (its offline queue) and runs it when it
 * reconnects. sluice turns off node-redis's per-command timer (it bounds its own calls), so nothing would
 * drop such a command: a decision the fail mode answered during an outage would be counted on Redis again
 * when it came back, and the queue would grow for as long as Redis was away. The connection refuses a call
 * while the client reconnects; this checks that no decision asked during an outage lands on Redis after it.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { type DecisionEvent, redisStore } from '@sluice/redis';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { spawnRedisServer } from '../harness/redis-server.js';

describe('node-redis while Redis is away', () => {
  it('decisions asked while the client reconnects are answered by the fail mode and never run on Redis later', async () => {
    const own = await spawnRedisServer();
    const client = createClient({ url: own.url, socket: { reconnectStrategy: () => 20 } });
    client.on('error', () => {});
    await client.connect();
    const sources: DecisionEvent['source'][] = [];
    const store = redisStore({
      redis: client,
      failMode: 'open',
      timeoutMs: 300,
      denyCache: false,
      onDecision: (e) => sources.push(e.source),
    });
    const limit = 1_000;
    const limiter = createLimiter({ rules: fixedWindow({ limit, windowMs: 3_600_000 }), store, prefix: 'offline' });
    expect((await limiter.tryAcquire('k')).remaining).toBe(limit - 1);

    // Not events.once: it rejects on the 'error' the lost connection emits first.
    const event = (name: string) => new Promise<void>((resolve) => client.once(name, () => resolve()));
    const reconnecting = event('reconnecting');
    own.process?.kill('SIGKILL');
    await reconnecting;
    // Asked while the client reconnects: each answered by failMode 'open', none counted anywhere. Through a
    // store made during the outage too (a node deployed meanwhile): its health has seen no failure yet, so its
    // calls reach the client, which would queue them.
    const lateStore = redisStore({ redis: client, failMode: 'open', timeoutMs: 300, denyCache: false });
    const late = createLimiter({
      rules: fixedWindow({ limit, windowMs: 3_600_000 }),
      store: lateStore,
      prefix: 'offline',
    });
    const during = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? limiter : late).tryAcquire('k')),
    );
    expect(during.map((d) => [d.allowed, d.source])).toEqual(during.map(() => [true, 'fallback']));

    const recovered = new Promise<void>((resolve) => store.once('store-recovered', () => resolve()));
    const ready = event('ready');
    const restarted = await spawnRedisServer([], { port: own.port });
    await ready;
    await recovered;
    // Redis came back empty (killed, no persistence): whatever it counts now was decided after it returned,
    // unless a call queued during the outage ran late.
    let onRedis = 0;
    for (let i = 0; i < 5; i++) if ((await limiter.tryAcquire('k')).source === undefined) onRedis++;
    expect(onRedis).toBe(5);
    expect((await limiter.peek('k')).remaining).toBe(limit - onRedis);
    expect(sources).toContain('fallback');
    await limiter.close();
    await late.close();
    await store.close();
    await lateStore.close();
    await client.close();
    await restarted.stop();
    await own.stop();
  });
});
