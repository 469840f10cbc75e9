/**
 * examples/login-protection over real HTTP: run as the README runs it (memory store, then Redis), and
 * in-process on a ManualClock to watch an hour's ban outlast its 15-minute window and end exactly on time.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock, memoryStore } from '@sluice/core';
import { loginApp } from '@sluice/example-login-protection/app';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { banKey } from '../../packages/redis/src/key-layout.js';
import { type RunningExample, runExample } from './run-example.js';

const running: RunningExample[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const example of running.splice(0)) expect(await example.stop()).toBe(0);
  for (const close of closers.splice(0)) await close();
});

/** One login attempt from `address` (the proxy in front appends the client to X-Forwarded-For). */
async function login(url: string, username: string, password: string, address = '198.51.100.7') {
  const res = await fetch(`${url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
    body: JSON.stringify({ username, password }),
  });
  await res.arrayBuffer();
  // The success refund runs when the response has been sent: give it a turn before the next attempt.
  await new Promise((resolve) => setTimeout(resolve, 10));
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

/** What every run checks: successes are free, the 6th failure bans the user from that address for an hour. */
async function bruteForce(url: string): Promise<void> {
  for (let i = 0; i < 10; i++) expect((await login(url, 'alice', 'wonderland')).status).toBe(200);
  for (let i = 0; i < 5; i++) expect((await login(url, 'alice', `guess-${i}`)).status).toBe(401);
  expect(await login(url, 'alice', 'guess-5')).toEqual({ status: 429, retryAfter: '3600' });
  // Banned: even the right password is refused from this address...
  expect((await login(url, 'alice', 'wonderland')).status).toBe(429);
  // ...but not from another, and not for another user.
  expect((await login(url, 'alice', 'wonderland', '203.0.113.9')).status).toBe(200);
  expect((await login(url, 'bob', 'builder')).status).toBe(200);
}

describe('examples/login-protection', () => {
  async function start(env: Record<string, string> = {}): Promise<{ example: RunningExample; url: string }> {
    const example = runExample('examples/login-protection/src/main.ts', { PORT: '0', ...env });
    running.push(example);
    const [, url] = await example.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    return { example, url: url as string };
  }

  it('as a process on the memory store: successes free, a ban after 5 failures, per user and address', async () => {
    const { example, url } = await start();
    expect(example.output()).toContain('(memory store)');
    await bruteForce(url);
  });

  const redis = useTestRedis();
  it('as a process on Redis: the same, with the ban kept on Redis', async () => {
    const { server, redis: client } = redis();
    const { example, url } = await start({ REDIS_URL: server.url });
    expect(example.output()).toContain(`(Redis at ${server.url})`);
    await bruteForce(url);
    const ban = await client.pttl(banKey('login', 'alice|ip:198.51.100.7'));
    expect(ban).toBeGreaterThan(3_590_000);
  });

  it('on a ManualClock: the ban outlasts the window and ends at exactly one hour; a correct password clears failures', async () => {
    const clock = new ManualClock(0);
    const { app, limiter } = loginApp({ store: memoryStore({ clock }), clock });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await limiter.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    // Four failures, then the right password: the failures are cleared, five more may follow.
    for (let i = 0; i < 4; i++) expect((await login(url, 'alice', 'x')).status).toBe(401);
    expect((await login(url, 'alice', 'wonderland')).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await login(url, 'alice', 'x')).status).toBe(401);
    expect((await login(url, 'alice', 'x')).status).toBe(429);

    clock.advance(15 * 60_000); // a new window: the rule alone would allow again
    expect(await login(url, 'alice', 'wonderland')).toEqual({ status: 429, retryAfter: '2700' });
    clock.advance(45 * 60_000 - 1);
    expect(await login(url, 'alice', 'wonderland')).toEqual({ status: 429, retryAfter: '1' });
    clock.advance(1);
    expect((await login(url, 'alice', 'wonderland')).status).toBe(200);
    // A request with no username is refused, not counted in a shared bucket.
    const anonymous = await fetch(`${url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(anonymous.status).toBe(400);
  });
});
