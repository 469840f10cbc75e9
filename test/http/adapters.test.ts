/**
 * What each adapter adds beyond the shared HTTP suite (servers.ts runs every scenario on all six): the same
 * options refused the same way everywhere, Fetch specifics (no client address in a Request, immutable
 * response headers), Hono's connection info and raw Responses.
 */
import { ManualClock, SluiceRangeError, SluiceTypeError, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { fetchRateLimit } from '@sluice/core/fetch';
import { honoRateLimit } from '@sluice/core/hono';
import { byIp, rateLimit, rateLimitHook } from '@sluice/core/http';
import { koaRateLimit } from '@sluice/core/koa';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';

const limiter = () =>
  createLimiter({
    rules: fixedWindow({ limit: 2, windowMs: 10_000, name: 'w' }),
    store: memoryStore({ clock: new ManualClock(4_000) }),
  });

describe('one options parser for every adapter', () => {
  const adapters: Record<string, (options: never) => unknown> = {
    rateLimit,
    rateLimitHook,
    koaRateLimit,
    honoRateLimit,
    fetchRateLimit: (options: object) => fetchRateLimit({ address: () => undefined, ...options } as never),
  };
  const l = limiter();
  const cases: Array<[object, typeof SluiceTypeError | typeof SluiceRangeError, string]> = [
    [{ limiter: {} }, SluiceTypeError, 'limiter'],
    [{ limiter: l, key: 'ip' }, SluiceTypeError, 'key'],
    [{ limiter: l, permits: 0 }, SluiceRangeError, 'permits'],
    [{ limiter: l, permits: 1.5 }, SluiceRangeError, 'permits'],
    [{ limiter: l, headers: 'draft-7' }, SluiceRangeError, 'headers'],
    [{ limiter: l, onMissingKey: 'shared' }, SluiceRangeError, 'onMissingKey'],
    [{ limiter: l, maxWaitMs: -1 }, SluiceRangeError, 'maxWaitMs'],
    [{ limiter: l, trustProxy: -1 }, SluiceRangeError, 'trustProxy'],
    [{ limiter: l, limitedResponse: 'x' }, SluiceTypeError, 'limitedResponse'],
    [{ limiter: l, skip: true }, SluiceTypeError, 'skip'],
  ];
  it.each(Object.keys(adapters))('%s refuses each bad option with the same typed error, naming it', (name) => {
    for (const [options, type, argument] of cases) {
      let error: unknown;
      try {
        (adapters[name] as (o: never) => unknown)(options as never);
      } catch (e) {
        error = e;
      }
      expect(error, `${name} ${JSON.stringify(options)}`).toBeInstanceOf(type);
      expect((error as SluiceTypeError).argument).toBe(argument);
    }
  });
});

describe('fetchRateLimit', () => {
  it('refuses to start with neither a key nor an address: a Request carries no client address', () => {
    expect(() => fetchRateLimit({ limiter: limiter() })).toThrow(/needs a key or an address/);
    expect(() => fetchRateLimit({ limiter: limiter(), key: byIp() })).not.toThrow();
  });

  it("wraps a handler with Node's own Request and Response: headers added, 429 with the JSON body, the handler's extra arguments reach address", async () => {
    const seen: unknown[] = [];
    const handler = fetchRateLimit<Request, [{ ip: string }]>({ limiter: limiter(), address: (_req, info) => info.ip })(
      async (req, info) => {
        seen.push(info);
        return new Response(`hello ${new URL(req.url).pathname}`, { headers: { 'x-app': '1' } });
      },
    );
    const ask = () => handler(new Request('https://example.test/a?b=c'), { ip: '203.0.113.9' });
    const first = await ask();
    expect([first.status, await first.text(), first.headers.get('x-app'), first.headers.get('ratelimit')]).toEqual([
      200,
      'hello /a',
      '1',
      '"w";r=1;t=6',
    ]);
    await ask();
    const denied = await ask();
    expect(denied.status).toBe(429);
    expect(denied.headers.get('retry-after')).toBe('6');
    expect(denied.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await denied.json()).toEqual({ error: 'Too Many Requests', rule: 'w', limit: 2, retryAfterSeconds: 6 });
    expect(seen).toEqual([{ ip: '203.0.113.9' }, { ip: '203.0.113.9' }]);
  });

  it('a response with immutable headers (Response.redirect) is copied with the headers added', async () => {
    const handler = fetchRateLimit({ limiter: limiter(), key: () => 'k' })(async () =>
      Response.redirect('https://example.test/elsewhere', 302),
    );
    const r = await handler(new Request('https://example.test/'));
    expect([r.status, r.headers.get('location'), r.headers.get('ratelimit')]).toEqual([
      302,
      'https://example.test/elsewhere',
      '"w";r=1;t=6',
    ]);
  });

  it('a key function that throws rejects the wrapped handler (the runtime answers it as any handler error)', async () => {
    const l = limiter();
    const handler = fetchRateLimit({
      limiter: l,
      key: () => {
        throw new Error('auth down');
      },
    })(async () => new Response('ok'));
    await expect(handler(new Request('https://example.test/'))).rejects.toThrow('auth down');
  });
});

describe('honoRateLimit', () => {
  it("reads the client address through the runtime adapter's getConnInfo, and adds headers to a raw Response", async () => {
    const app = new Hono();
    app.use(
      '*',
      honoRateLimit({ limiter: limiter(), getConnInfo: (c) => ({ remote: { address: c.req.header('x-test-peer') } }) }),
    );
    app.get('/', () => new Response('raw'));
    const ask = (peer: string) => app.request('/', { headers: { 'x-test-peer': peer } });
    const first = await ask('198.51.100.7');
    expect([first.status, await first.text(), first.headers.get('ratelimit')]).toEqual([200, 'raw', '"w";r=1;t=6']);
    await ask('198.51.100.7');
    expect((await ask('198.51.100.7')).status).toBe(429);
    expect((await ask('198.51.100.8')).status).toBe(200); // another address, another bucket
  });
});
