/**
 * Method decorators keyed by the current request (`key: byIp()`, `key: byUser(...)`), behind each of the
 * six HTTP adapters: interleaved requests from different clients each count against their own key (the
 * request context never leaks between concurrent requests), and a call outside any request is a typed error.
 */
import { ManualClock, SluiceError, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { rateLimited as limitMethod } from '@sluice/core/decorators';
import { byIp, byUser, currentRequestContext, requestContext } from '@sluice/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, frameworks, get, startServer } from './servers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function service() {
  const limiter = createLimiter({
    rules: fixedWindow({ limit: 3, windowMs: 60_000 }),
    store: memoryStore({ clock: new ManualClock(0) }),
  });
  const decided: string[] = [];
  const onDecision = limiter.tryAcquire.bind(limiter);
  limiter.tryAcquire = (key, options) => {
    decided.push(key);
    return onDecision(key, options);
  };
  class Codes {
    // The client address as the proxy in front of these servers (the test) wrote it.
    @limitMethod({ limiter, key: byIp({ trustProxy: 1 }) })
    async send(delayMs: number): Promise<{ sentTo: string | undefined }> {
      await new Promise((r) => setTimeout(r, delayMs));
      return { sentTo: currentRequestContext()?.view.header('x-forwarded-for') };
    }
  }
  return { limiter, decided, codes: new Codes() };
}

describe.each(frameworks)('decorators keyed by request, behind %s', (framework) => {
  it('interleaved requests from 8 clients: each call is keyed by its own request, 3 per client allowed', async () => {
    const { codes, decided } = service();
    // Each request waits a different time inside the method, so their continuations interleave.
    const server = await startServer(
      framework,
      {
        limiter: createLimiter({ rules: fixedWindow({ limit: 1_000, windowMs: 60_000 }) }),
        key: () => 'all',
      } as never,
      async () =>
        codes
          .send(Math.floor(Math.random() * 20))
          .catch((error: unknown) => ({ limited: (error as SluiceError).code })),
    );
    servers.push(server);
    const clients = Array.from({ length: 8 }, (_, i) => `198.51.100.${i + 1}`);
    const replies = await Promise.all(
      clients.flatMap((ip) =>
        Array.from({ length: 5 }, () => get(server.url, { 'x-forwarded-for': ip }).then((r) => [ip, r.body] as const)),
      ),
    );
    for (const ip of clients) {
      const mine = replies.filter(([client]) => client === ip).map(([, body]) => body);
      expect(
        mine.filter((b) => (b as { sentTo?: string }).sentTo === ip),
        ip,
      ).toHaveLength(3);
      expect(
        mine.filter((b) => (b as { limited?: string }).limited === 'RATE_LIMITED'),
        ip,
      ).toHaveLength(2);
    }
    expect(new Set(decided)).toEqual(new Set(clients.map((ip) => `ip:${ip}`)));
  });
});

describe('outside a request', () => {
  it('a decorator keyed by request throws SluiceError NO_REQUEST saying why, and consumes nothing', async () => {
    const { codes, decided } = service();
    const error = await codes.send(0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('NO_REQUEST');
    expect((error as Error).message).toMatch(
      /@rateLimited on Codes\.send keys calls by the current request, but it was called outside any request/,
    );
    expect(decided).toEqual([]);
  });

  it('requestContext() alone opens one: byUser reads the framework request', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }) });
    class Profile {
      @limitMethod({
        limiter,
        key: byUser((req: { headers: Record<string, unknown> }) => req.headers['x-user'] as string | undefined),
      })
      async load(): Promise<string> {
        return 'profile';
      }
    }
    const profile = new Profile();
    const open = requestContext();
    const inRequest = (user: string) =>
      new Promise<unknown>((resolve) =>
        open({ headers: { 'x-user': user } }, {}, () =>
          resolve(profile.load().catch((e: unknown) => (e as SluiceError).code)),
        ),
      );
    expect(await inRequest('ann')).toBe('profile');
    expect(await inRequest('ann')).toBe('RATE_LIMITED');
    expect(await inRequest('bob')).toBe('profile');
  });
});
