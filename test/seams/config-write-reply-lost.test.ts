/**
 * Live limits x a lost reply: a configuration write that reached Redis but whose answer never came back (the
 * connection died with it; the client may send it again after reconnecting). The write is read back before
 * `reconfigure` answers: stored, so the change resolves, is raised in the slots and announced, and every node
 * obeys it at once. Before (c132e5b) it rejected "could not be stored" (or CONFLICT, for its own write sent
 * again) although it was stored, and went into force later, unannounced, when another node read the record.
 */
import { createLimiter } from '@sluice/core';
import { type RedisStore, redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { FaultProxy } from '../faults/fault-proxy.js';
import { liveBucket, livePrefix } from '../harness/live-nodes.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';

let server: TestRedis | undefined;
let proxy: FaultProxy | undefined;
const closing: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  await proxy?.close();
  await server?.stop();
  proxy = undefined;
  server = undefined;
});

function limiterOn(url: string, prefix: string, timeoutMs: number) {
  const client = new Redis(url);
  const store: RedisStore = redisStore({ redis: client, timeoutMs, denyCache: false });
  const limiter = createLimiter({ rules: liveBucket(100), store, prefix });
  closing.push(
    () => client.disconnect(),
    () => store.close(),
    () => limiter.close(),
  );
  return limiter;
}

it('a configuration write whose reply is lost is read back: stored, so reconfigure resolves and every node obeys it at once', async () => {
  server = await spawnRedisServer();
  proxy = await FaultProxy.start(server.port);
  const prefix = livePrefix();
  const a = limiterOn(`redis://127.0.0.1:${proxy.port}`, prefix, 300);
  const b = limiterOn(server.url, prefix, 1_000);
  await Promise.all([a.ready(), b.ready()]);
  expect((await a.tryAcquire('k', { permits: 10 })).allowed).toBe(true);

  // The write's OK never reaches a; its connection then dies (a reply lost with it). The chunk ends with it: the
  // reply of its script's library load, sent just before, may share it.
  const held = proxy.holdReplies(/\$2\r\nOK\r\n$/);
  const change = a.reconfigure(liveBucket(5));
  await held;
  proxy.passReplies();
  proxy.dropConnections();

  const { version, rules } = await change;
  expect(rules[0]?.limit).toBe(5);
  // Raised in the slots and in force on every node from its next decision (10 used of 5: nothing left).
  expect(await b.tryAcquire('k')).toMatchObject({ allowed: false, limit: 5, configVersion: version });
  expect(b.configVersion).toBe(version);
  // A node started later reads the same configuration: nothing went into force unannounced.
  const c = limiterOn(server.url, prefix, 1_000);
  await c.ready();
  expect([c.configVersion, c.rules[0]?.limit]).toEqual([version, 5]);
});

it('a write whose reply never comes, and whose read-back gets none either, is answered as uncertain, naming the version', async () => {
  server = await spawnRedisServer();
  proxy = await FaultProxy.start(server.port);
  const prefix = livePrefix();
  const a = limiterOn(`redis://127.0.0.1:${proxy.port}`, prefix, 300);
  await a.ready();
  // The reply is held and the connection stays up: the client pairs replies in order, so the read after the
  // write is handed another command's answer, which is no configuration's: neither is answered.
  const held = proxy.holdReplies(/\$2\r\nOK\r\n$/);
  const change = a.reconfigure(liveBucket(5));
  await held;
  await expect(change).rejects.toMatchObject({
    code: 'STORE_UNAVAILABLE',
    message: expect.stringMatching(/version \d+ may have been stored/),
  });
  // It was: a node that reads the record decides under it.
  const c = limiterOn(server.url, prefix, 1_000);
  await c.ready();
  expect(c.rules[0]?.limit).toBe(5);
});
