/**
 * Allow and deny lists over real HTTP, on every framework adapter: an allowed key is never limited, a denied
 * one gets the limiter's 429 with the entry's reason (never the entry), and a CIDR range matches the client's
 * address as the adapter read it (its trustProxy settings), under every key strategy: byIp, byUser, an API-key
 * header, a custom function, a method decorator's. A key the client chose never counts as an address.
 */
import { type SluiceError, createLimiter, fixedWindow } from '@sluice/core';
import { rateLimited } from '@sluice/core/decorators';
import { byIp, byUser } from '@sluice/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, frameworks, get, startServer } from './servers.js';
import type { AnyRequestKey } from '../../packages/core/src/adapters/http/keys.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const userKey: AnyRequestKey = (_req, view) => `user:${view?.header('x-user') ?? 'anon'}`;
const perMinute = () => fixedWindow({ name: 'minute', limit: 2, windowMs: 60_000 });

describe.each(frameworks)('access lists on %s', (framework) => {
  it('an allowed key is never limited; a denied one gets a 429 with the reason', async () => {
    const limiter = createLimiter({ rules: perMinute() });
    const server = await startServer(framework, { limiter, key: userKey as never });
    servers.push(server);
    await limiter.allow('user:partner');
    await limiter.deny('user:mallory', { reason: 'abuse ticket 12' });
    for (let i = 0; i < 5; i++) expect((await get(server.url, { 'x-user': 'partner' })).status).toBe(200);
    const denied = await get(server.url, { 'x-user': 'mallory' });
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({
      error: 'Too Many Requests',
      reason: 'abuse ticket 12',
      retryAfterSeconds: null,
    });
    expect(JSON.stringify(denied.body)).not.toContain('user:mallory');
    expect(denied.headers.get('retry-after')).toBeNull();
    // A rule's denial says no reason.
    for (let i = 0; i < 2; i++) await get(server.url, { 'x-user': 'alice' });
    expect((await get(server.url, { 'x-user': 'alice' })).body).not.toHaveProperty('reason');
    await limiter.close();
  });

  it("a CIDR range denies the client's address under the default key", async () => {
    const limiter = createLimiter({ rules: perMinute() });
    const server = await startServer(framework, { limiter });
    servers.push(server);
    expect((await get(server.url)).status).toBe(200);
    await limiter.deny('127.0.0.0/8', { ttlMs: 60_000 });
    const denied = await get(server.url);
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({ reason: 'denied by the access list' });
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThan(50);
    await limiter.close();
  });

  it('an API key shaped like an address is a key: it never inherits the allow list (the client chose it)', async () => {
    const limiter = createLimiter({ rules: perMinute() });
    const apiKey: AnyRequestKey = (_req, view) => view?.header('x-api-key');
    const server = await startServer(framework, { limiter, key: apiKey as never });
    servers.push(server);
    await limiter.allow(['10.0.0.0/8', '::ffff:10.0.0.0/104']);
    for (const key of ['10.0.7.1', '::ffff:10.1.1.1']) {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await get(server.url, { 'x-api-key': key })).status);
      // Before: every request passed (50 of 50 in the issue).
      expect(statuses, key).toEqual([200, 200, 429, 429, 429]);
    }
    await limiter.close();
  });

  it("the client's own address is matched whatever the key: byUser, a custom function, byIp", async () => {
    for (const key of [
      userKey,
      byUser((req: { headers?: Record<string, string> }) => req.headers?.['x-user']),
      byIp(),
    ]) {
      const limiter = createLimiter({ rules: perMinute() });
      const server = await startServer(framework, { limiter, key: key as never });
      servers.push(server);
      await limiter.deny('127.0.0.1', { reason: 'this client' });
      const denied = await get(server.url, { 'x-user': 'alice' });
      expect(denied.status).toBe(429);
      expect(denied.body).toMatchObject({ reason: 'this client' });
      await limiter.unlist('127.0.0.1');
      await limiter.allow('127.0.0.0/8');
      for (let i = 0; i < 5; i++) expect((await get(server.url, { 'x-user': 'alice' })).status).toBe(200);
      await limiter.close();
    }
  });

  it("proxy headers: read only with trustProxy; a client's own X-Forwarded-For never reaches the lists", async () => {
    const limiter = createLimiter({ rules: perMinute() });
    const direct = await startServer(framework, { limiter, key: userKey as never });
    const proxied = await startServer(framework, { limiter, key: userKey as never, trustProxy: 1 } as never);
    servers.push(direct, proxied);
    await limiter.allow('198.51.100.0/24');
    await limiter.deny('203.0.113.0/24', { reason: 'scanner' });
    // No proxy trusted: a spoofed header is ignored, both ways.
    const spoofed = { 'x-user': 'eve', 'x-forwarded-for': '198.51.100.1' };
    const direct3 = [];
    for (let i = 0; i < 3; i++) direct3.push((await get(direct.url, spoofed)).status);
    expect(direct3).toEqual([200, 200, 429]);
    expect((await get(direct.url, { 'x-user': 'bob', 'x-forwarded-for': '203.0.113.5' })).status).toBe(200);
    // Behind one proxy of ours: the address it appended decides.
    expect((await get(proxied.url, { 'x-user': 'carol', 'x-forwarded-for': '203.0.113.5' })).status).toBe(429);
    for (let i = 0; i < 5; i++)
      expect((await get(proxied.url, { 'x-user': 'dave', 'x-forwarded-for': '198.51.100.9' })).status).toBe(200);
    await limiter.close();
  });

  it("a method decorator keyed by the request meets the lists with the request's address", async () => {
    const limiter = createLimiter({ rules: perMinute() });
    class Codes {
      @rateLimited({ limiter, key: byUser((req: { headers?: Record<string, string> }) => req.headers?.['x-user']) })
      async send(): Promise<{ sent: true }> {
        return { sent: true };
      }
      @rateLimited({ limiter, key: byIp({ trustProxy: 1 }) })
      async sendByIp(): Promise<{ sent: true }> {
        return { sent: true };
      }
    }
    const codes = new Codes();
    const server = await startServer(
      framework,
      { limiter: createLimiter({ rules: fixedWindow({ limit: 1_000, windowMs: 60_000 }) }), key: () => 'all' } as never,
      async (header) =>
        (header('x-by') === 'ip' ? codes.sendByIp() : codes.send()).catch((error: unknown) => ({
          limited: (error as SluiceError).code,
        })),
    );
    servers.push(server);
    await limiter.deny(['127.0.0.1', '203.0.113.0/24']);
    expect((await get(server.url, { 'x-user': 'alice' })).body).toEqual({ limited: 'RATE_LIMITED' });
    expect((await get(server.url, { 'x-by': 'ip', 'x-forwarded-for': '203.0.113.5' })).body).toEqual({
      limited: 'RATE_LIMITED',
    });
    await limiter.unlist('127.0.0.1');
    expect((await get(server.url, { 'x-user': 'alice' })).body).toEqual({ sent: true });
    expect((await get(server.url, { 'x-by': 'ip', 'x-forwarded-for': '198.51.100.5' })).body).toEqual({ sent: true });
    await limiter.close();
  });
});
