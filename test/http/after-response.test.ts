/**
 * Accounting once the response is known, on every adapter over real HTTP: skipSuccessfulRequests,
 * skipFailedRequests (a status, or a connection closed before the response), permitsAfterResponse (read from
 * each framework's own response object, charged past the limit, negative to give back), callbacks that
 * throw, shadow mode, and options refused at construction.
 */
import {
  type Limiter,
  ManualClock,
  SluiceTypeError,
  createLimiter,
  fixedWindow,
  memoryStore,
  smoothBursty,
  tokenBucket,
} from '@sluice/core';
import { rateLimit } from '@sluice/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { type Framework, type TestServer, echoRoute, frameworks, get, nodeFrameworks, startServer } from './servers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A response header, read from whatever response object the framework hands the callbacks. */
function responseHeader(res: unknown, name: string): string | undefined {
  const r = res as {
    getHeader?: (n: string) => unknown;
    headers?: { get?: (n: string) => string | null };
    response?: { get?: (n: string) => string };
  };
  if (typeof r.getHeader === 'function') return r.getHeader(name) as string | undefined; // node, Express, Fastify's reply
  if (typeof r.response?.get === 'function') return r.response.get(name) || undefined; // Koa's ctx
  return r.headers?.get?.(name) ?? undefined; // a Fetch Response (Fetch handlers, Hono)
}

/** The server's after-response work runs when the response ends, after the client read it: give it a turn. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

async function hit(url: string, headers: Record<string, string> = {}) {
  const r = await get(url, headers);
  await settled();
  return r;
}

describe.each(frameworks)('after-response accounting on %s', (framework: Framework) => {
  async function serve(options: Parameters<typeof rateLimit>[0]): Promise<string> {
    const server = await startServer(framework, options as never, echoRoute);
    servers.push(server);
    return server.url;
  }
  const limiterOf = (limit: number, clock = new ManualClock(0)): Limiter =>
    createLimiter({ rules: fixedWindow({ limit, windowMs: 60_000, name: 'w' }), store: memoryStore({ clock }) });

  it('skipSuccessfulRequests: successes give their permits back, failures count (the login case)', async () => {
    const limiter = limiterOf(3);
    const url = await serve({ limiter, key: () => 'alice', skipSuccessfulRequests: true });
    for (let i = 0; i < 5; i++) expect((await hit(url)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await hit(url, { 'x-status': '401' })).status).toBe(401);
    expect((await hit(url)).status).toBe(429);
    expect((await limiter.peek('alice')).remaining).toBe(0);
  });

  it('skipFailedRequests: 4xx and 5xx give their permits back; requestWasSuccessful can say otherwise', async () => {
    const limiter = limiterOf(2);
    const url = await serve({ limiter, key: () => 'k', skipFailedRequests: true });
    for (const status of ['500', '404', '503'])
      expect((await hit(url, { 'x-status': status })).status).toBe(Number(status));
    expect((await limiter.peek('k')).remaining).toBe(2);
    const strict = limiterOf(2);
    const url2 = await serve({
      limiter: strict,
      key: () => 'k',
      skipFailedRequests: true,
      requestWasSuccessful: (_req, res) => responseHeader(res, 'x-tokens') === undefined,
    });
    await hit(url2, { 'x-tokens': '1' }); // a 200 this callback calls a failure: given back
    await hit(url2);
    expect((await strict.peek('k')).remaining).toBe(1);
  });

  it("permitsAfterResponse reads the framework's response, charges past the limit, and gives back when negative", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 1, name: 'tpm' }),
      store: memoryStore({ clock }),
    });
    // The request takes an estimate of 10; the response says what it used, and the difference is settled.
    const url = await serve({
      limiter,
      key: () => 'tenant',
      permits: 10,
      permitsAfterResponse: (_req, res) => Number(responseHeader(res, 'x-tokens') ?? 10) - 10,
    });
    await hit(url, { 'x-tokens': '4' });
    expect((await limiter.peek('tenant')).remaining).toBe(96);
    await hit(url, { 'x-tokens': '150' });
    const denied = await hit(url);
    expect(denied.status).toBe(429);
    expect(denied.headers.get('retry-after')).toBe(String(Math.ceil((10 - -54) / 1)));
  });

  it('a callback that throws or returns a bad number reaches onAccountingError; nothing is charged and the server is fine', async () => {
    const limiter = limiterOf(5);
    const errors: Error[] = [];
    let call = 0;
    const url = await serve({
      limiter,
      key: () => 'k',
      permitsAfterResponse: () => {
        call++;
        if (call === 1) throw new Error('boom');
        return call === 2 ? Number.NaN : 1.5;
      },
      onAccountingError: (error) => errors.push(error),
    });
    for (let i = 0; i < 3; i++) expect((await hit(url)).status).toBe(200);
    expect(errors.map((e) => e.message)).toEqual([
      'boom',
      expect.stringMatching(/permitsAfterResponse must return an integer, got NaN/),
      expect.stringMatching(/got 1.5/),
    ]);
    expect((await limiter.peek('k')).remaining).toBe(2);
  });

  it('shadow mode: a request let through that the rules would deny took nothing, so nothing is settled', async () => {
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000, name: 'w' }),
      clock: new ManualClock(0),
      shadow: true,
    });
    const url = await serve({ limiter, key: () => 'k', skipFailedRequests: true, permitsAfterResponse: () => 5 });
    await hit(url, { 'x-status': '500' }); // allowed for real: refunded as a failure, then charged 5
    await hit(url); // shadowed: nothing taken, nothing charged
    expect((await limiter.peek('k')).remaining).toBe(0);
  });
});

describe('after-response accounting: the connection closes before the response', () => {
  it.each(nodeFrameworks)(
    '%s: an aborted request counts as failed (skipFailedRequests gives it back)',
    async (framework) => {
      const limiter = createLimiter({
        rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
        clock: new ManualClock(0),
      });
      let answered = 0;
      const server = await startServer(
        framework,
        { limiter, key: () => 'k', skipFailedRequests: true } as never,
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 300));
          answered++;
          return { late: true };
        },
      );
      servers.push(server);
      const aborted = new AbortController();
      const request = fetch(server.url, { signal: aborted.signal }).catch(() => 'aborted');
      await new Promise((resolve) => setTimeout(resolve, 60));
      aborted.abort();
      expect(await request).toBe('aborted');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(answered).toBe(1);
      expect((await limiter.peek('k')).remaining).toBe(1);
    },
  );
});

describe('after-response options are checked at construction', () => {
  const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }) });
  it.each([
    [{ skipSuccessfulRequests: 'yes' }, 'skipSuccessfulRequests'],
    [{ skipFailedRequests: 1 }, 'skipFailedRequests'],
    [{ permitsAfterResponse: 5 }, 'permitsAfterResponse'],
    [{ requestWasSuccessful: true }, 'requestWasSuccessful'],
    [{ onAccountingError: 'log' }, 'onAccountingError'],
  ])('%o is refused naming %s', (bad, argument) => {
    expect(() => rateLimit({ limiter, ...(bad as object) })).toThrow(expect.objectContaining({ argument }));
  });
  it("a refund on a rule that cannot give permits back (Guava's prepay) is refused, naming it", () => {
    const smooth = createLimiter({ rules: smoothBursty({ permitsPerSecond: 5, name: 'pace' }) });
    expect(() => rateLimit({ limiter: smooth, skipFailedRequests: true })).toThrow(SluiceTypeError);
    expect(() => rateLimit({ limiter: smooth, skipFailedRequests: true })).toThrow(/"pace"/);
    expect(() => rateLimit({ limiter: smooth })).not.toThrow();
  });
});

describe('after-response accounting on a streamed body (Fetch handlers, Hono)', () => {
  /** A body of three 10-token chunks, counting tokens as it is read, as an LLM proxy would. */
  function streamed(): { response: () => Response; tokens: () => number } {
    let tokens = 0;
    return {
      tokens: () => tokens,
      response: () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              if (tokens >= 30) return controller.close();
              tokens += 10;
              controller.enqueue(new TextEncoder().encode('t'.repeat(10)));
            },
          }),
        ),
    };
  }

  it('fetch: the permits after the response are charged when the body has been read to its end, with what streaming counted', async () => {
    const { fetchRateLimit } = await import('@sluice/core/fetch');
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 100, refillPerSecond: 1 }),
      clock: new ManualClock(0),
    });
    const body = streamed();
    const handler = fetchRateLimit({ limiter, key: () => 'k', permitsAfterResponse: () => body.tokens() })(async () =>
      body.response(),
    );
    const res = await handler(new Request('http://localhost/'));
    expect((await limiter.peek('k')).remaining).toBe(99); // streaming: nothing charged yet
    expect(await res.text()).toHaveLength(30);
    await settled();
    expect((await limiter.peek('k')).remaining).toBe(69);
  });

  it('hono: a body the client cancels counts as failed (skipFailedRequests gives it back)', async () => {
    const { Hono } = await import('hono');
    const { honoRateLimit } = await import('@sluice/core/hono');
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      clock: new ManualClock(0),
    });
    const app = new Hono();
    app.use('*', honoRateLimit({ limiter, key: () => 'k', skipFailedRequests: true }));
    app.get('/', () => streamed().response());
    const res = await app.request('/');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.cancel();
    await settled();
    expect((await limiter.peek('k')).remaining).toBe(1);
  });
});
