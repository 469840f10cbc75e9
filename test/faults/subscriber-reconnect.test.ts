/**
 * A store closed while its subscriber connection re-subscribes after a reconnect. ioredis and iovalkey
 * re-subscribe a standalone connection on their own without handling the command's promise: closed before
 * Redis answered, it rejected ("Connection is closed") with nobody listening, an unhandled rejection that
 * ends a Node process by default. Found as a rare failure of the whole suite; made certain here by a proxy
 * that holds the SUBSCRIBE reply back.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { Redis as Iovalkey } from 'iovalkey';
import { describe, expect, it } from 'vitest';
import { nextEvent, untilAsync } from '../harness/events.js';
import { useTestRedis } from '../harness/use-redis.js';
import { FaultProxy } from './fault-proxy.js';
import { unhandledDuring } from '../harness/unhandled.js';

const redis = useTestRedis();

describe.each([
  ['ioredis', (port: number) => new Redis({ port })],
  ['iovalkey', (port: number) => new Iovalkey({ port })],
] as const)('%s', (_, connect) => {
  it('a store closed while its subscriber re-subscribes: no unhandled rejection', async () => {
    const proxy = await FaultProxy.start(redis().server.port);
    const unhandled = await unhandledDuring(async () => {
      const client = connect(proxy.port);
      client.on('error', () => {});
      const store = redisStore({ redis: client });
      const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), store, prefix: 'resub' });
      await limiter.ready(); // subscribed to the reset channel
      const resubscribing = proxy.holdReplies(/subscribe/);
      proxy.dropConnections();
      await resubscribing;
      await limiter.close();
      await store.close();
      client.disconnect();
    });
    await proxy.close();
    expect(unhandled).toEqual([]);
  });

  it('after a reconnect the store is subscribed again: a reset made elsewhere is heard', async () => {
    const proxy = await FaultProxy.start(redis().server.port);
    const client = connect(proxy.port);
    client.on('error', () => {});
    const store = redisStore({ redis: client });
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), store, prefix: 'heard' });
    const elsewhere = redisStore({ redis: redis().redis });
    const other = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      store: elsewhere,
      prefix: 'heard',
    });
    await Promise.all([limiter.ready(), other.ready()]);
    const subscribers = async () =>
      ((await redis().redis.call('PUBSUB', 'NUMSUB', 'heard:sluice-reset')) as [string, number])[1];
    expect(await subscribers()).toBe(2);
    const reconnected = nextEvent(client, 'ready');
    proxy.dropConnections();
    await reconnected;
    await untilAsync(async () => (await subscribers()) === 2, 'subscribed again');
    const heard = nextEvent(store, 'reset-heard');
    await other.reset('k');
    expect((await heard)[0]).toEqual({ prefix: 'heard', key: 'k' });
    await Promise.all([limiter.close(), other.close()]);
    await Promise.all([store.close(), elsewhere.close()]);
    client.disconnect();
    await proxy.close();
  });
});
