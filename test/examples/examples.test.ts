/**
 * Every example starts as the README says and answers over real HTTP (or prints what it promises).
 */
import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { fixedWindow } from '@sluice/core';
import { stateName } from '@sluice/core/internal';
import { stateKey } from '../../packages/redis/src/key-layout.js';
import { type RunningExample, runExample, runToEnd } from './run-example.js';

const running: RunningExample[] = [];
afterEach(async () => {
  for (const example of running.splice(0)) expect(await example.stop()).toBe(0); // stops cleanly on SIGTERM
});

async function start(
  script: string,
  env: Record<string, string> = {},
): Promise<{ example: RunningExample; url: string }> {
  const example = runExample(script, { PORT: '0', ...env });
  running.push(example);
  const [, url] = await example.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
  return { example, url: url as string };
}

/**
 * The count route is a 10 s fixed window aligned to the clock: a burst that straddles a boundary is
 * (correctly) allowed again. Starting bursts early in a window keeps these checks deterministic.
 */
async function earlyInTenSecondWindow(): Promise<void> {
  const into = Date.now() % 10_000;
  if (into > 4_000) await new Promise((r) => setTimeout(r, 10_000 - into + 50));
}

const statusOf = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return { status: res.status, headers: res.headers };
};

describe('examples/http-api', () => {
  async function exercise(url: string): Promise<void> {
    await earlyInTenSecondWindow();
    const count = [];
    for (let i = 0; i < 3; i++) count.push(await statusOf(`${url}/limiter/count?key=t`));
    expect(count.map((r) => r.status)).toEqual([200, 200, 429]);
    const retry = Number(count[2]?.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(10);
    expect(count[0]?.headers.get('ratelimit-policy')).toBe('"count";q=2;w=10');

    const rate = [await statusOf(`${url}/limiter/rate`), await statusOf(`${url}/limiter/rate`)];
    expect(rate.map((r) => r.status)).toEqual([200, 429]);
    expect(rate[1]?.headers.get('retry-after')).toBe('5');

    const rate2 = [await statusOf(`${url}/limiter/rate2`), await statusOf(`${url}/limiter/rate2`)];
    expect(rate2.map((r) => r.status)).toEqual([200, 429]);
    expect(rate2[1]?.headers.get('retry-after')).toBe('30');

    const api = await statusOf(`${url}/api/orders`, { headers: { 'X-User-Id': '42' } });
    expect(api.status).toBe(200);
    expect(api.headers.get('ratelimit-policy')).toBe(
      '"per-10s";q=200;w=10, "per-hour";q=5000;w=3600, "per-day";q=20000;w=86400, "global";q=1000;w=1',
    );
    expect(api.headers.get('ratelimit')).toMatch(
      /^"per-10s";r=199;t=\d+, "per-hour";r=4999;t=\d+, "per-day";r=19999;t=\d+, "global";r=999;t=1$/,
    );
  }

  it('serves the demo controller from the memory store', async () => {
    const { example, url } = await start('examples/http-api/src/main.ts');
    expect(example.output()).toContain('(memory store)');
    await exercise(url);
  });

  const redis = useTestRedis();
  it('serves it from Redis when REDIS_URL is set', async () => {
    const { server, redis: client } = redis();
    const { example, url } = await start('examples/http-api/src/main.ts', { REDIS_URL: server.url });
    expect(example.output()).toContain(`(Redis at ${server.url})`);
    await exercise(url);
    const keys = await client.keys('demo.*');
    expect(keys.some((k) => k.startsWith('demo.count{key:t}'))).toBe(true);
    expect(
      keys.some((k) =>
        k.startsWith(
          stateKey('demo.api', 'all', stateName(fixedWindow({ limit: 1_000, windowMs: 1_000, name: 'global' }))),
        ),
      ),
    ).toBe(true);
  });
});

// Every demo controller in examples/frameworks/src (serve.ts is what they share).
const demos = readdirSync(new URL('../../examples/frameworks/src/', import.meta.url))
  .filter((file) => file.endsWith('.ts') && file !== 'serve.ts')
  .map((file) => file.slice(0, -3));

describe.each(demos)('examples/frameworks: the demo controller on %s', (framework) => {
  it('answers /limiter/count and /limiter/rate over real HTTP with the same headers as every adapter', async () => {
    const env: Record<string, string> =
      framework === 'nestjs' ? { TSX_TSCONFIG_PATH: 'examples/frameworks/tsconfig.json' } : {};
    const { example, url } = await start(`examples/frameworks/src/${framework}.ts`, env);
    expect(example.output()).toContain(`sluice ${framework} example listening on`);
    await earlyInTenSecondWindow();
    const count = [];
    for (let i = 0; i < 3; i++) count.push(await statusOf(`${url}/limiter/count?key=t`));
    expect(count.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(count[0]?.headers.get('ratelimit-policy')).toBe('"count";q=2;w=10');
    expect(count[1]?.headers.get('ratelimit')).toMatch(/^"count";r=0;t=\d+$/);
    expect(count[2]?.headers.get('content-type')).toMatch(/^application\/json/);
    const rate = [await statusOf(`${url}/limiter/rate`), await statusOf(`${url}/limiter/rate`)];
    expect(rate.map((r) => r.status)).toEqual([200, 429]);
    expect(rate.map((r) => r.headers.get('ratelimit'))).toEqual(['"rate";r=0;t=10', '"rate";r=0;t=10']);
    expect(rate[1]?.headers.get('retry-after')).toBe('5');
  });
});

describe('npm run demo (examples/http-api/src/demo.ts)', () => {
  it('drives a burst, prints allowed and refused with headers, and stays up with curl lines', async () => {
    await earlyInTenSecondWindow();
    const example = runExample('examples/http-api/src/demo.ts', { PORT: '0' });
    running.push(example);
    const [, url] = await example.waitFor(/curl -i '(http:\/\/127\.0\.0\.1:\d+)\/limiter\/count/);
    const out = example.output();
    expect(out.match(/200 allowed/g)?.length).toBe(9);
    expect(out.match(/429 REFUSED/g)?.length).toBe(3);
    expect(out).toMatch(/429 REFUSED {3}retry-after: 5 {3}ratelimit: "rate";r=0;t=10/);
    // Still up: the printed curl line works.
    expect((await statusOf(`${url}/limiter/count?key=alice`)).status).toBe(429);
  });
});

describe('examples/verification-code', () => {
  it('sends one code per phone per 60 s, by count limit and by rate limit', async () => {
    const { url } = await start('examples/verification-code/src/main.ts');
    for (const mode of ['', '&mode=rate']) {
      const first = await fetch(`${url}/codes?phone=5550100${mode}`, { method: 'POST' });
      expect(first.status).toBe(202);
      expect(await first.json()).toMatchObject({ phone: '5550100', code: expect.stringMatching(/^\d{6}$/) });
      const second = await fetch(`${url}/codes?phone=5550100${mode}`, { method: 'POST' });
      expect(second.status).toBe(429);
      const retry = Number(second.headers.get('retry-after'));
      expect(retry).toBeGreaterThan(0);
      expect(retry).toBeLessThanOrEqual(60);
      await second.arrayBuffer();
      expect((await statusOf(`${url}/codes?phone=5550199${mode}`, { method: 'POST' })).status).toBe(202);
    }
    expect((await statusOf(`${url}/codes?phone=abc`, { method: 'POST' })).status).toBe(400);
  });
});

describe('examples/guava-style', () => {
  it('runs to the end and shows pacing, warm-up, keyed decisions and the day-long policy', async () => {
    const { code, output } = await runToEnd('examples/guava-style/src/main.ts');
    expect(code).toBe(0);
    expect(output).toMatch(/acquire #5: waited/);
    expect(output).toContain('4,320,000 requests -> 20,000 allowed');
  });
});

describe('examples/beyond-http', () => {
  const redis = useTestRedis();
  /** Resolves once `done()` holds (checked every 10 ms, bounded at 10 s). */
  const until = async (done: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error('not within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  it('grpc: a tenant past its 3 calls waits out the pushback through the client interceptor; without it, the refusal', async () => {
    const { code, output } = await runToEnd('examples/beyond-http/src/grpc.ts', 30_000);
    expect(code).toBe(0);
    for (const item of ['apple', 'pear', 'fig', 'plum', 'kiwi'])
      expect(output).toMatch(new RegExp(`acme ${item}: \\d+`));
    // The last two of acme's five waited for a refill (1.67 s a call) on the server's retry-after.
    const waited = [...output.matchAll(/([\d.]+) s {2}acme (plum|kiwi): \d+/g)].map((m) => Number(m[1]));
    expect(Math.min(...waited)).toBeGreaterThan(1.5);
    expect(output).toMatch(
      /solo date: 8 Too Many Requests: rule quotes \(limit 3\).*<- refused: no interceptor to wait/,
    );
  });

  it('nest: the GraphQL resolver and the WebSocket gateway each answer 3, then refuse in their own way', async () => {
    const { url } = await start('examples/beyond-http/src/nest.ts', {
      TSX_TSCONFIG_PATH: 'examples/beyond-http/tsconfig.json',
    });
    const quotes = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ quote }' }),
      });
      const body = (await res.json()) as { data?: { quote: number }; errors?: { extensions: { code: string } }[] };
      quotes.push(body.data?.quote ?? body.errors?.[0]?.extensions.code);
    }
    expect(quotes).toEqual([30, 30, 30, 'RATE_LIMITED']);
    const { default: WebSocket } = await import('ws');
    const socket = new WebSocket(`${url.replace('http', 'ws')}/ws`);
    const heard: { event: string }[] = [];
    socket.on('message', (raw) => heard.push(JSON.parse(String(raw)) as { event: string }));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    for (let i = 0; i < 4; i++) socket.send(JSON.stringify({ event: 'chat', data: String(i) }));
    await until(() => heard.length === 4);
    expect(heard.map((m) => m.event).sort()).toEqual(['chat', 'chat', 'chat', 'exception']);
    socket.close();
  });

  it('bullmq: 12 jobs at 4 a second, none failed, none reordered', async () => {
    const example = runExample('examples/beyond-http/src/bullmq.ts', { REDIS_URL: redis().server.url });
    running.push(example);
    await example.waitFor(/12 jobs, 0 failed, \d+ held back and run later, in the order added: true/, 30_000);
    // It ends by itself, having closed its worker, queue and connection.
    await new Promise((resolve) =>
      example.child.exitCode !== null ? resolve(undefined) : example.child.once('exit', resolve),
    );
    expect(example.child.exitCode).toBe(0);
    const perSecond = [...example.output().matchAll(/second \d+: (\d+) jobs/g)].map((m) => Number(m[1]));
    expect(Math.max(...perSecond)).toBeLessThanOrEqual(4);
    expect(perSecond.reduce((a, b) => a + b, 0)).toBe(12);
  });
});
