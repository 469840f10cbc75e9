/**
 * Allow and deny lists over real HTTP, on every framework adapter: an allowed key is never limited, a denied
 * one gets the limiter's 429 with the entry's reason (never the entry), and a CIDR range denies the client's
 * address under the default key.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import type { AnyRequestKey } from '@sluice/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, frameworks, get, startServer } from './servers.js';

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
});
