/**
 * Production connections: a store over TLS (a throwaway redis-server with a test certificate), and under a
 * least-privilege ACL user (its key prefix, its pub/sub channel and the commands sluice uses, nothing else:
 * the README's ACL line, checked here). A user without a needed permission gets an error naming the command.
 */
import { SLUICE_ACL, SLUICE_FUNCTIONS_ACL, aclWithout } from '../harness/acl.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SluiceError, concurrencyLimiter, createLimiter, fixedWindow, throttle, tokenBucket } from '@sluice/core';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { type RedisClient, redisStore } from '@sluice/redis';
import { GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextEvent } from '../harness/events.js';
import { freePort } from '../harness/free-port.js';
import { type TestRedis, spawnRedisServer, startTestRedis } from '../harness/redis-server.js';

describe('TLS', () => {
  let dir: string;
  let server: TestRedis;
  let ca: Buffer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    ca = readFileSync(join(dir, 'c.pem'));
    const tlsPort = await freePort();
    server = await spawnRedisServer([
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      join(dir, 'c.pem'),
      '--tls-key-file',
      join(dir, 'k.pem'),
      '--tls-ca-cert-file',
      join(dir, 'c.pem'),
      '--tls-auth-clients',
      'no',
    ]);
    (server as { tlsPort?: number }).tlsPort = tlsPort;
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a store over rediss:// decides exactly (ioredis and node-redis)', async () => {
    const port = (server as { tlsPort?: number }).tlsPort as number;
    const ioredis = new Redis(`rediss://127.0.0.1:${port}`, { tls: { ca } });
    const nodeRedis = createClient({ url: `rediss://127.0.0.1:${port}`, socket: { tls: true, ca } });
    nodeRedis.on('error', () => {});
    await nodeRedis.connect();
    for (const client of [ioredis, nodeRedis]) {
      const store = redisStore({ redis: client });
      const limiter = createLimiter({
        rules: fixedWindow({ limit: 5, windowMs: 60_000 }),
        store,
        prefix: `tls${Math.random().toString(36).slice(2)}`,
      });
      const decisions = await Promise.all(Array.from({ length: 12 }, () => limiter.tryAcquire('k')));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
      await limiter.close();
      await store.close();
    }
    ioredis.disconnect();
    nodeRedis.destroy();
  });
});

describe('a least-privilege ACL user', () => {
  let server: TestRedis;
  let admin: Redis;
  /** A store on `client` that fails closed, the errors it reports, and a fixedWindow limiter on prefix `sluice`. */
  const limiterOn = (client: RedisClient, limit: number) => {
    const store = redisStore({ redis: client, failMode: 'closed' });
    const errors: Error[] = [];
    store.on('store-error', (e) => errors.push(e));
    const limiter = createLimiter({ rules: fixedWindow({ limit, windowMs: 60_000 }), store, prefix: 'sluice' });
    return { store, errors, limiter };
  };
  /** An ioredis, a node-redis and a GLIDE client logged in as `user`, and what closes them. */
  const clientsAs = async (user: string) => {
    const ioredis = new Redis({ host: server.host, port: server.port, username: user, password: 'secret' });
    const nodeRedis = createClient({ url: `redis://${user}:secret@${server.host}:${server.port}` });
    nodeRedis.on('error', () => {});
    await nodeRedis.connect();
    const glide = await GlideClient.createClient({
      addresses: [{ host: server.host, port: server.port }],
      credentials: { username: user, password: 'secret' },
    });
    return {
      clients: [ioredis, nodeRedis, glide],
      close: () => {
        ioredis.disconnect();
        nodeRedis.destroy();
        glide.close();
      },
    };
  };
  beforeAll(async () => {
    server = await startTestRedis();
    admin = new Redis(server.url);
    await admin.call('ACL', 'SETUSER', 'sluice', '>secret', ...SLUICE_ACL);
    await admin.call('ACL', 'SETUSER', 'no-scripts', '>secret', ...aclWithout('+evalsha', '+eval'));
    await admin.call('ACL', 'SETUSER', 'no-set', '>secret', ...aclWithout('+set'));
    await admin.call('ACL', 'SETUSER', 'functions', '>secret', ...SLUICE_ACL, ...SLUICE_FUNCTIONS_ACL);
    await admin.call('ACL', 'SETUSER', 'no-zadd', '>secret', ...aclWithout('+zadd'));
    await admin.call(
      'ACL',
      'SETUSER',
      'other-keys',
      '>secret',
      ...SLUICE_ACL.map((p) => (p === '~sluice{*' ? '~other{*' : p)),
    );
  });
  afterAll(async () => {
    await admin?.call('ACL', 'DELUSER', 'sluice', 'no-scripts', 'no-set', 'no-zadd', 'other-keys', 'functions');
    admin?.disconnect();
    await server?.stop();
  });

  it('runs exact, leased and divided mode with only the README ACL line (ioredis and node-redis)', async () => {
    const ioredis = new Redis({ host: server.host, port: server.port, username: 'sluice', password: 'secret' });
    const nodeRedis = createClient({ url: `redis://sluice:secret@${server.host}:${server.port}` });
    nodeRedis.on('error', () => {});
    await nodeRedis.connect();
    for (const client of [ioredis, nodeRedis]) {
      const errors: Error[] = [];
      const store = redisStore({ redis: client });
      store.on('store-error', (e) => errors.push(e));
      const a = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 60_000 }), store, prefix: 'sluice' });
      const b = createLimiter({
        rules: fixedWindow({ limit: 3, windowMs: 60_000 }),
        store: redisStore({ redis: client }),
        prefix: 'sluice',
      });
      const key = `k${Math.random()}`;
      expect(
        (await Promise.all(Array.from({ length: 5 }, () => a.tryAcquire(key)))).filter((d) => d.allowed),
      ).toHaveLength(3);
      await a.ready(); // a's subscriber is subscribed
      const heard = nextEvent(store, 'reset-heard');
      await b.reset(key); // DEL, and PUBLISH on the prefix's channel, which a hears (SUBSCRIBE)
      await heard;
      expect((await a.tryAcquire(key)).allowed).toBe(true);
      const leased = leasedLimiterOn({
        rules: tokenBucket({ capacity: 5, refillPerSecond: 0.01 }),
        redis: client,
        prefix: 'sluice',
      });
      let granted = 0;
      for (let i = 0; i < 8; i++) if ((await leased.tryAcquire(key)).allowed) granted++;
      expect(granted).toBe(5);
      const divided = dividedLimiterOn({
        rules: fixedWindow({ limit: 10, windowMs: 1_000 }),
        redis: client,
        prefix: 'sluice',
        heartbeatMs: 50,
      });
      await new Promise((resolve) => divided.store.once('membership', resolve));
      expect(errors).toEqual([]);
      await Promise.all([a.close(), b.close(), leased.close(), divided.close(), store.close()]);
    }
    ioredis.disconnect();
    nodeRedis.destroy();
  });

  it("with the README's two optional permissions scripts run as functions (FCALL); without them, by EVALSHA", async () => {
    const calls = async (command: string) =>
      Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await admin.info('commandstats'))?.[1] ?? 0);
    for (const user of ['functions', 'sluice']) {
      const { clients, close } = await clientsAs(user);
      for (const client of clients) {
        await admin.call('FUNCTION', 'FLUSH');
        const { store, errors, limiter } = limiterOn(client, 30);
        const key = `f${Math.random()}`;
        let granted = 0;
        for (let i = 0; i < 10; i++) if ((await limiter.tryAcquire(key)).allowed) granted++;
        const before = { fcall: await calls('fcall'), evalsha: await calls('evalsha') };
        for (let i = 0; i < 10; i++) if ((await limiter.tryAcquire(key)).allowed) granted++;
        const ran = {
          fcall: (await calls('fcall')) - before.fcall,
          evalsha: (await calls('evalsha')) - before.evalsha,
        };
        expect(ran, user).toEqual(user === 'functions' ? { fcall: 10, evalsha: 0 } : { fcall: 0, evalsha: 10 });
        expect(granted).toBe(20);
        expect(errors).toEqual([]);
        await limiter.close();
        await store.close();
      }
      close();
    }
  });

  it('without a needed permission, start-up says which (ready() rejects, store-error, a warning), before any decision, on every library', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const cases = [
      // The server's words differ (NOPERM; Redis 7.0's "can't run this command" inside a script; Valkey's
      // "ACL failure in script"): the code is what a caller relies on, and the message names the command.
      { user: 'no-scripts', expected: /lacks a permission.*'eval(sha)?' command/i },
      { user: 'no-set', expected: /lacks a permission.*'set' command/i },
      { user: 'other-keys', expected: /lacks a permission.*key/i },
    ];
    for (const { user, expected } of cases) {
      const { clients, close } = await clientsAs(user);
      for (const client of clients) {
        const { store, errors, limiter } = limiterOn(client, 3);
        const failure = await store.ready().then(
          () => undefined,
          (e: unknown) => e as SluiceError,
        );
        expect(failure, user).toBeInstanceOf(SluiceError);
        expect(failure?.code, failure?.message).toBe('STORE_MISCONFIGURED');
        expect(failure?.message).toMatch(expected);
        expect(failure?.message).toMatch(/limiter "sluice"/);
        expect(errors.map((e) => e.message)).toEqual([failure?.message]);
        await limiter.close();
        await store.close();
      }
      close();
    }
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect(
      warnings.filter((w) => (w as { code?: string }).code === 'SLUICE_STORE_MISCONFIGURED').length,
    ).toBeGreaterThan(0);
  });

  it('the README ACL user passes the start-up check of every mode; each mode checks the commands of its own scripts', async () => {
    const client = new Redis({ host: server.host, port: server.port, username: 'sluice', password: 'secret' });
    const store = redisStore({ redis: client });
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 3, refillPerSecond: 1 }),
      store,
      prefix: 'sluice',
    });
    const leased = leasedLimiterOn({
      rules: tokenBucket({ capacity: 5, refillPerSecond: 1 }),
      redis: client,
      prefix: 'sluice',
    });
    const divided = dividedLimiterOn({
      rules: fixedWindow({ limit: 10, windowMs: 1_000 }),
      redis: client,
      prefix: 'sluice',
    });
    // A concurrency limiter on the same store is checked too (its semaphore script's commands).
    const slots = concurrencyLimiter({ max: 2, store, prefix: 'sluice' });
    await expect(Promise.all([store.ready(), leased.ready(), divided.ready()])).resolves.toBeDefined();
    const slot = await slots.acquire('k');
    await slot.release();
    // A throttle's queue and pauses under the same line.
    const calls = throttle({ limiter });
    await calls.pause(5);
    expect(await calls.run(() => 'ran')).toBe('ran');
    await calls.close();
    await Promise.all([limiter.close(), slots.close(), store.close(), leased.close(), divided.close()]);
    client.disconnect();

    // Without ZADD: exact mode with failMode 'open' needs none; the fleet's heartbeat of failMode 'local' (exact
    // and leased), leased mode's lease script and divided mode's heartbeat do.
    const noZadd = new Redis({ host: server.host, port: server.port, username: 'no-zadd', password: 'secret' });
    const exactStore = redisStore({ redis: noZadd, failMode: 'open' });
    const localStore = redisStore({ redis: noZadd });
    localStore.on('store-error', () => {});
    const local = createLimiter({
      rules: tokenBucket({ capacity: 3, refillPerSecond: 1 }),
      store: localStore,
      prefix: 'sluice',
    });
    const exact = createLimiter({
      rules: tokenBucket({ capacity: 3, refillPerSecond: 1 }),
      store: exactStore,
      prefix: 'sluice',
    });
    const leasedNoZadd = leasedLimiterOn({
      rules: tokenBucket({ capacity: 5, refillPerSecond: 1 }),
      redis: noZadd,
      prefix: 'sluice',
    });
    const dividedNoZadd = dividedLimiterOn({
      rules: fixedWindow({ limit: 10, windowMs: 1_000 }),
      redis: noZadd,
      prefix: 'sluice',
    });
    dividedNoZadd.store.on('store-error', () => {});
    leasedNoZadd.store.on('store-error', () => {});
    await expect(exactStore.ready()).resolves.toBeUndefined();
    for (const needsZadd of [local, leasedNoZadd, dividedNoZadd]) {
      await expect(needsZadd.ready()).rejects.toMatchObject({
        code: 'STORE_MISCONFIGURED',
        message: expect.stringMatching(/'zadd' command/),
      });
    }
    await Promise.all([
      exact.close(),
      exactStore.close(),
      local.close(),
      localStore.close(),
      leasedNoZadd.close(),
      dividedNoZadd.close(),
    ]);
    noZadd.disconnect();
  });
});
