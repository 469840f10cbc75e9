/**
 * A concurrency slot comes back however a response ends, on every adapter: a HEAD request (servers send and
 * read no body), a 204 or 304, a handler that throws, a body nobody ever reads (an outer layer answered with
 * another Response), and a client that leaves while its request waits. Each of these once kept the slot for
 * the life of the process (HEAD, HEAD, HEAD -> 200, 200, 429, then every request 429).
 */
import type { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { concurrencyLimiter, createLimiter, fixedWindow } from '@sluice/core';
import { fetchRateLimit } from '@sluice/core/fetch';
import { honoRateLimit } from '@sluice/core/hono';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { collectGarbage } from '../faults/gc.js';
import { Answer, type Framework, type TestServer, fetchFrameworks, frameworks, startServer } from './servers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serveWith(framework: Framework, options: object, respond: () => Promise<unknown>): Promise<string> {
  const server = await startServer(framework, options as never, respond);
  servers.push(server);
  return server.url;
}

const request = async (url: string, method: string): Promise<number> => {
  const res = await fetch(url, { method });
  await res.arrayBuffer();
  return res.status;
};

describe.each(frameworks)('a slot comes back on %s', (framework: Framework) => {
  const options = () => ({ concurrency: concurrencyLimiter({ max: 1 }), key: () => 'k' });

  it('after HEAD requests (no body is sent or read)', async () => {
    const url = await serveWith(framework, options(), async () => ({ ok: true }));
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push(await request(url, 'HEAD'));
    statuses.push(await request(url, 'GET'));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });

  it.each([204, 304])('after %i responses (a status that carries no body)', async (status) => {
    const url = await serveWith(framework, options(), async () => new Answer(status, null));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push(await request(url, 'GET'));
    expect(statuses).toEqual([status, status, status]);
  });

  it('after a handler that throws', async () => {
    let calls = 0;
    const url = await serveWith(framework, options(), async () => {
      calls++;
      if (calls <= 2) throw new Error('the handler failed');
      return { ok: true };
    });
    const statuses = [await request(url, 'GET'), await request(url, 'GET'), await request(url, 'GET')];
    expect(statuses).toEqual([500, 500, 200]);
  });

  it('when the client leaves while its request waits for a slot: it never takes one later', async () => {
    const limiter = concurrencyLimiter({ max: 1 });
    const held = await limiter.acquire('k');
    const url = await serveWith(
      framework,
      { concurrency: { limiter, maxWaitMs: 60_000 }, key: () => 'k' },
      async () => ({
        ok: true,
      }),
    );
    const leaving = new AbortController();
    const waiting = fetch(url, { signal: leaving.signal }).catch(() => 'left');
    // The request is queued once the limiter counts a waiter for the key: then the client leaves.
    await waitFor(() => limiter.waiting('k') === 1);
    leaving.abort();
    await waiting;
    await waitFor(() => limiter.waiting('k') === 0);
    await held.release();
    // The slot is free for the next caller: the one that left did not take it.
    const next = await limiter.tryAcquire('k');
    expect(next).toBeDefined();
    await next?.release();
  });
});

/** Polls `condition` once per turn of the event loop, at most 2,000 turns: waits for an event, never a fixed sleep. */
async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('the condition never held');
}

describe('a Fetch body nobody reads', () => {
  /** Serves `fetch` with an outer layer that answers with its own Response, dropping the inner one unread. */
  async function dropping(inner: (request: Request) => Promise<Response>): Promise<string> {
    const server = await new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = serve(
        {
          fetch: async (request: Request) => {
            await inner(request); // a cache or an error page answered instead: the body is never read
            return new Response('replaced');
          },
          port: 0,
          hostname: '127.0.0.1',
        },
        () => resolve(s as ReturnType<typeof createServer>),
      );
    });
    servers.push({
      url: '',
      close: async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it.each(fetchFrameworks)('%s: the slot comes back once the dropped Response is collected', async (kind) => {
    const limiter = concurrencyLimiter({ max: 1 });
    const options = { concurrency: limiter, key: () => 'k', address: () => '127.0.0.1' };
    let inner: (request: Request) => Promise<Response>;
    if (kind === 'fetch') inner = fetchRateLimit(options)(async () => new Response('the body'));
    else {
      const app = new Hono();
      app.use('*', honoRateLimit({ concurrency: limiter, key: () => 'k' }));
      app.get('/', (c) => c.text('the body'));
      inner = async (request) => app.fetch(request);
    }
    const url = await dropping(inner);
    expect(await request(url, 'GET')).toBe(200);
    // Held until the unread body is collected: then it is freed, and a request gets the slot.
    for (let i = 0; i < 200; i++) {
      collectGarbage();
      await new Promise((resolve) => setTimeout(resolve, 5));
      const slot = await limiter.tryAcquire('k');
      if (slot !== undefined) {
        await slot.release();
        return;
      }
    }
    throw new Error('the slot of a dropped Response never came back');
  });

  it('fetch: the rate limit is settled too (skipFailedRequests refunds a body that was never sent)', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 60_000 }) });
    const url = await dropping(
      fetchRateLimit({ limiter, key: () => 'k', address: () => '127.0.0.1', skipFailedRequests: true })(
        async () => new Response('the body'),
      ),
    );
    expect(await request(url, 'GET')).toBe(200);
    for (let i = 0; i < 200; i++) {
      collectGarbage();
      await new Promise((resolve) => setTimeout(resolve, 5));
      if ((await limiter.peek('k')).remaining === 3) return;
    }
    throw new Error('the grant of a dropped Response was never settled');
  });
});

describe('settling a Fetch Response', () => {
  it('a HEAD request, a null body status and no body settle at once, as completed', async () => {
    const { settleAfterBody } = await import('../../packages/core/src/adapters/http/response-end.js');
    const ends: string[] = [];
    const settle = (_: Response, end: { status: number; completed: boolean }) =>
      ends.push(`${end.status}:${end.completed}`);
    settleAfterBody(new Response('x'), settle, { method: 'HEAD' });
    settleAfterBody(new Response(null, { status: 304 }), settle, { method: 'GET' });
    settleAfterBody(new Response(null, { status: 200 }), settle, { method: 'GET' });
    expect(ends).toEqual(['200:true', '304:true', '200:true']);
  });

  it('the client going away (request.signal) settles an unread body once, as not completed', async () => {
    const { settleAfterBody } = await import('../../packages/core/src/adapters/http/response-end.js');
    const ends: boolean[] = [];
    const gone = new AbortController();
    const response = settleAfterBody(new Response('x'), (_, end) => ends.push(end.completed), {
      method: 'GET',
      signal: gone.signal,
    });
    gone.abort();
    await response.body?.cancel().catch(() => {});
    expect(ends).toEqual([false]);
  });

  it('a body read to the end settles once, as completed', async () => {
    const { settleAfterBody } = await import('../../packages/core/src/adapters/http/response-end.js');
    const ends: boolean[] = [];
    const response = settleAfterBody(new Response('abc'), (_, end) => ends.push(end.completed), { method: 'GET' });
    expect(await response.text()).toBe('abc');
    expect(ends).toEqual([true]);
  });
});
