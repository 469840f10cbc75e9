/**
 * Live limits over real HTTP: after `reconfigure` the RateLimit headers say the new limits on the next
 * response, and a key's override says its own, on every framework adapter (the headers come from the
 * decision).
 */
import { ManualClock, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, frameworks, get, startServer } from './servers.js';
import type { AnyRequestKey } from '../../packages/core/src/adapters/http/keys.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const userKey: AnyRequestKey = (_req, view) => `user:${view?.header('x-user') ?? 'anon'}`;
const perMinute = (limit: number) => fixedWindow({ name: 'minute', limit, windowMs: 60_000 });

describe.each(frameworks)('live limits on %s', (framework) => {
  it('the headers follow a reconfigure and an override from the next response', async () => {
    const limiter = createLimiter({ rules: perMinute(5), store: memoryStore({ clock: new ManualClock(30_000) }) });
    const server = await startServer(framework, { limiter, key: userKey as never });
    servers.push(server);
    const policy = async (user: string) => {
      const r = await get(server.url, { 'x-user': user });
      return [r.status, r.headers.get('ratelimit-policy'), r.headers.get('ratelimit')];
    };
    expect(await policy('alice')).toEqual([200, '"minute";q=5;w=60', '"minute";r=4;t=30']);
    await limiter.reconfigure(perMinute(10));
    expect(await policy('alice')).toEqual([200, '"minute";q=10;w=60', '"minute";r=8;t=30']);
    await limiter.override('user:bob', perMinute(2));
    expect(await policy('bob')).toEqual([200, '"minute";q=2;w=60', '"minute";r=1;t=30']);
    expect(await policy('bob')).toEqual([200, '"minute";q=2;w=60', '"minute";r=0;t=30']);
    expect((await policy('bob'))[0]).toBe(429);
    await limiter.removeOverride('user:bob');
    expect(await policy('bob')).toEqual([200, '"minute";q=10;w=60', '"minute";r=7;t=30']);
    await limiter.close();
  });
});
