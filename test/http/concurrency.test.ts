/**
 * The `concurrency` option on every adapter over real HTTP: requests in flight per key capped, a request
 * with no slot answered 429 (rule `concurrency`), waiting for a slot within its timeout, the slot given back
 * when the response ends or the client goes away, and the rate limit's permits given back for a request
 * that got no slot.
 */
import { ManualClock, concurrencyLimiter, createLimiter, fixedWindow } from '@sluice/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type Framework, type TestServer, frameworks, get, nodeFrameworks, startServer } from './servers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A route that takes `ms` to answer and counts how many are inside it at once. */
function slowRoute(ms: number) {
  const stats = { inside: 0, worst: 0, answered: 0 };
  const respond = async () => {
    stats.inside++;
    stats.worst = Math.max(stats.worst, stats.inside);
    await sleep(ms);
    stats.inside--;
    stats.answered++;
    return { ok: true };
  };
  return { stats, respond };
}

describe.each(frameworks)('concurrency on %s', (framework: Framework) => {
  async function serve(options: object, respond: () => Promise<unknown>): Promise<string> {
    const server = await startServer(framework, options as never, respond);
    servers.push(server);
    return server.url;
  }

  it('at most max in flight per key: the rest get 429 (rule concurrency), another key has its own slots', async () => {
    const { stats, respond } = slowRoute(150);
    const url = await serve(
      {
        concurrency: concurrencyLimiter({ max: 2 }),
        key: (_req: unknown, view: { header(n: string): string | undefined }) => view.header('x-user'),
      },
      respond,
    );
    const replies = await Promise.all(
      [1, 2, 3, 4].map(() => get(url, { 'x-user': 'alice' })).concat([get(url, { 'x-user': 'bob' })]),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, 429, 429]);
    const refused = replies.find((r) => r.status === 429);
    // No time is known when a slot frees: the route's retry hint (1 s by default), never "can never pass".
    expect(refused?.body).toEqual({
      error: 'Too Many Requests',
      rule: 'concurrency',
      limit: 2,
      retryAfterSeconds: 1,
    });
    expect(refused?.headers.get('retry-after')).toBe('1');
    expect(stats.worst).toBe(3); // 2 of alice's and bob's
    // The slots came back when the responses ended.
    await sleep(20);
    expect((await get(url, { 'x-user': 'alice' })).status).toBe(200);
  });

  it('with a timeout a request waits for a slot: all are served, never more than max inside', async () => {
    const { stats, respond } = slowRoute(80);
    const url = await serve(
      { concurrency: { limiter: concurrencyLimiter({ max: 2 }), maxWaitMs: 5_000 }, key: () => 'k' },
      respond,
    );
    const replies = await Promise.all(Array.from({ length: 6 }, () => get(url)));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(stats.worst).toBe(2);
  });

  it("a request that gets no slot gives its rate limit's permits back", async () => {
    const { respond } = slowRoute(150);
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 10, windowMs: 60_000, name: 'w' }),
      clock: new ManualClock(0),
    });
    const url = await serve({ limiter, concurrency: concurrencyLimiter({ max: 1 }), key: () => 'k' }, respond);
    const replies = await Promise.all([1, 2, 3].map(() => get(url)));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 429, 429]);
    await sleep(50);
    expect((await limiter.peek('k')).remaining).toBe(9);
  });
});

describe('concurrency: the client goes away', () => {
  it.each(nodeFrameworks)(
    '%s: the slot comes back when the connection closes, not when the handler ends',
    async (framework) => {
      const { respond } = slowRoute(600);
      const server = await startServer(
        framework,
        { concurrency: concurrencyLimiter({ max: 1 }), key: () => 'k' } as never,
        respond,
      );
      servers.push(server);
      const aborted = new AbortController();
      const first = fetch(server.url, { signal: aborted.signal }).catch(() => 'aborted');
      await sleep(100);
      aborted.abort();
      await first;
      await sleep(50);
      // The handler still runs (500 ms left), but the connection closed: its slot is free.
      expect((await get(server.url)).status).not.toBe(429);
    },
  );
});

describe('concurrency options', () => {
  it('are checked: a concurrencyLimiter or { limiter, maxWaitMs }; one of limiter and concurrency', async () => {
    const { rateLimit } = await import('@sluice/core/http');
    expect(() => rateLimit({ concurrency: 5 } as never)).toThrow(expect.objectContaining({ argument: 'concurrency' }));
    expect(() =>
      rateLimit({ concurrency: { limiter: concurrencyLimiter({ max: 1 }), maxWaitMs: -1 } } as never),
    ).toThrow(expect.objectContaining({ argument: 'concurrency.maxWaitMs' }));
    expect(() => rateLimit({} as never)).toThrow(expect.objectContaining({ argument: 'limiter' }));
    expect(() => rateLimit({ concurrency: concurrencyLimiter({ max: 1 }), skipFailedRequests: true } as never)).toThrow(
      /needs a limiter/,
    );
  });
});
