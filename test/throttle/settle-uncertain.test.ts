/**
 * A settle whose refund Redis did not answer in time, though Redis runs it once it is free again: the refund
 * may have landed, so the ticket counts it as landed and a retry gives nothing back twice (before: the retry
 * was taken and the key was given its 100 permits back twice, 700 left of 1,000 where 600 is right).
 */
import { type ThrottleTicket, createLimiter, fixedWindow, throttle } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { nextEvent } from '../harness/events.js';
import { type TestRedis, startTestRedis } from '../harness/redis-server.js';

let server: TestRedis;
beforeAll(async () => {
  server = await startTestRedis();
});
afterAll(async () => {
  await server.stop();
});

/** Holds the server for `ms` in one script, so every other client's call waits for it. */
const BUSY =
  "local s = redis.call('TIME') while true do local n = redis.call('TIME') " +
  'if (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > tonumber(ARGV[1]) * 1000 then break end end return 1';

it('a refund Redis did not answer in time counts as landed: the ticket is settled, a retry gives nothing twice', async () => {
  const redis = new Redis(server.url);
  const other = new Redis(server.url);
  const store = redisStore({ redis, timeoutMs: 100 });
  const limiter = createLimiter({
    rules: fixedWindow({ name: 'tpm', limit: 1_000, windowMs: 60_000 }),
    store,
    prefix: 'settle-uncertain',
  });
  const calls = throttle({ limiter });
  try {
    const remaining = async () => (await limiter.peek(calls.key)).remaining;
    const ticket = await calls.run((granted: ThrottleTicket) => granted, { permits: 500 });
    expect(await remaining()).toBe(500);
    // The deadline missed takes the store to its fail mode; it asks Redis again when Redis answers.
    const recovered = nextEvent(store, 'store-recovered');
    const busy = other.eval(BUSY, 0, 500);
    await new Promise((resolve) => setImmediate(resolve));
    await expect(ticket.settle(400)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(ticket.settled).toBe(true);
    await busy;
    await recovered;
    await expect(ticket.settle(400)).rejects.toMatchObject({ code: 'ALREADY_SETTLED' });
    // The late refund ran when the server was free: 100 given back once.
    expect(await remaining()).toBe(600);
  } finally {
    await calls.close();
    await limiter.close();
    await store.close();
    redis.disconnect();
    other.disconnect();
  }
});
