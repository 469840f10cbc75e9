/**
 * The admin router reads a request one way only (docs/threat-model.md, "The admin router and its status
 * page"): a write's body has the fields its schema declares, none other; a path is a route whole, never a
 * route with more after it; a limiter's name has one spelling in a path, so a gate in front reading the raw
 * path sees what the router acts on; an Origin is compared scheme, host and port with the connection; the
 * audit names the limiter one way; and the fail-closed probe asks about cookies too.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpsRequest, createServer as httpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Limiter } from '@sluice/core';
import { type AdminRouterOptions, adminRouter, nodeAdminHandler } from '@sluice/core/admin';
import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../harness/closers.js';
import { adminLimiters, listenOn, serve } from './fixture.js';

const TOKEN = 'Bearer 1f0e2d3c4b5a69788796a5b4c3d2e1f0';
const JSON_TYPE = { 'content-type': 'application/json' };
const closers = closeAfterEach();

/** Limiters 'api', 'secret' and 'team/a' (3 per minute) and the audit of a router over them. */
function setup(more: Partial<AdminRouterOptions> = {}) {
  const { limiters, actions, options } = adminLimiters(closers, ['api', 'secret', 'team/a'], {
    rule: 'r',
    token: TOKEN,
  });
  const [api, secret, team] = limiters as [Limiter, Limiter, Limiter];
  const router = adminRouter(options(more));
  const call = async (method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
    const answer = await router.fetch(
      new Request(`http://h/admin${path}`, {
        method,
        headers: { authorization: TOKEN, ...JSON_TYPE, ...headers },
        ...(body === undefined ? {} : { body }),
      }),
    );
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  return { api, secret, team, actions, router, call };
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> {
  return ((await serve(closers, handler)).address() as AddressInfo).port;
}

describe('a write body is parsed by its schema: an unknown field is refused by name', () => {
  it('lists, block, reset, unblock, override and unlist: 400 naming the field and the known ones, nothing changed', async () => {
    const { api, actions, call } = setup();
    await api.deny('gone');
    const refused: Array<[string, string, string, string]> = [
      ['POST', '/api/limiters/api/lists', '{"list":"allow","entries":["y"],"ttl":5}', 'list, entries, ttlMs, reason'],
      ['POST', '/api/limiters/api/keys/k/block', '{"ms":1000,"msx":5}', 'ms'],
      ['POST', '/api/limiters/api/keys/k/reset', '{"key":"other"}', 'take none'],
      ['POST', '/api/limiters/api/keys/k/unblock', '{"all":true}', 'take none'],
      ['PUT', '/api/limiters/api/keys/k/override', '{"rules":[],"ttlMs":5}', 'rules'],
      ['DELETE', '/api/limiters/api/keys/k/override', '{"x":null}', 'take none'],
      ['DELETE', '/api/limiters/api/lists', '{"entries":["gone"],"list":"deny"}', 'entries'],
    ];
    for (const [method, path, body, known] of refused) {
      const answer = await call(method, path, body);
      expect([path, answer.status]).toEqual([path, 400]);
      expect(answer.body.message).toContain(known);
      expect(answer.body.argument).toBe(Object.keys(JSON.parse(body)).at(-1));
    }
    await api.tryAcquire('k');
    expect((await api.peek('k')).remaining).toBe(2);
    expect((await api.accessList()).map((e) => e.entry)).toEqual(['gone']);
    expect(actions.map((a) => a.outcome)).toEqual(Array(refused.length).fill('failed'));
    // The declared fields still do what they say: ttlMs holds the entry for 5 s, not for ever.
    expect(
      (await call('POST', '/api/limiters/api/lists', '{"list":"allow","entries":["y"],"ttlMs":5000}')).status,
    ).toBe(200);
    const y = (await api.accessList()).find((e) => e.entry === 'y');
    expect(y?.expiresAt).toBeGreaterThan(0);
    expect((await call('POST', '/api/limiters/api/keys/k/block', '{"ms":1000}')).status).toBe(200);
    expect((await call('POST', '/api/limiters/api/keys/k/unblock', '')).status).toBe(200);
    expect((await call('POST', '/api/limiters/api/keys/k/reset', '{}')).status).toBe(200);
  });
});

describe('a query is parsed by its schema too', () => {
  it('top and overrides take theirs, every other route none: an unknown or repeated parameter is a 400 naming it', async () => {
    const { api, actions, call } = setup();
    await api.tryAcquire('k');
    const refused: Array<[string, string, string, string]> = [
      ['GET', '/api/limiters/api/top?n=5&minutess=3', 'minutess', 'n, minutes'],
      ['GET', '/api/limiters/api/top?n=5&n=1000', 'n', 'twice'],
      ['GET', '/api/limiters/api/overrides?cursr=abc', 'cursr', 'cursor'],
      ['GET', '/api/limiters/api/keys/k?address=10.0.0.1', 'address', 'take none'],
      ['GET', '/api/limiters?all=1', 'all', 'take none'],
      ['POST', '/api/limiters/api/keys/k/reset?key=other', 'key', 'take none'],
    ];
    for (const [method, path, argument, known] of refused) {
      const answer = await call(method, path, method === 'GET' ? undefined : '');
      expect([path, answer.status, answer.body.argument]).toEqual([path, 400, argument]);
      expect(answer.body.message).toContain(known);
    }
    expect((await api.peek('k')).remaining).toBe(2);
    expect(actions.map((a) => [a.action, a.outcome])).toEqual([['reset', 'failed']]);
    const top = await call('GET', '/api/limiters/api/top?n=5&minutes=3');
    expect([top.status, top.body.minutes]).toEqual([200, 3]);
  });
});

describe('a path is a route whole', () => {
  it('segments past a route are no route: 404, nothing changed, nothing audited', async () => {
    const { api, actions, call } = setup();
    await api.tryAcquire('k');
    await api.block('b', 60_000);
    for (const [method, path] of [
      ['POST', '/api/limiters/api/keys/k/reset/whatever/else'],
      ['POST', '/api/limiters/api/keys/k/reset/'],
      ['POST', '/api/limiters/api/keys/b/unblock/x'],
      ['POST', '/api/limiters/api/lists/x'],
      ['GET', '/api/limiters/api/top/x'],
      ['POST', '/api/limiters/api/keys/k/peek'],
      ['GET', '/api/limiters/api/keys'],
      ['GET', '/api/limiters/'],
      ['GET', '/index.html/x'],
    ] as const)
      expect([
        path,
        (await call(method, path, method === 'GET' ? undefined : '{"list":"allow","entries":["k"]}')).status,
      ]).toEqual([path, 404]);
    expect((await api.peek('k')).remaining).toBe(2);
    expect((await api.tryAcquire('b')).blocked).toBe(true);
    expect(await api.accessList()).toEqual([]);
    expect(actions).toEqual([]);
    expect((await call('POST', '/api/limiters/api/keys/k/reset')).status).toBe(200);
  });
});

describe('a limiter has one spelling in a path', () => {
  it('a percent-encoded name names no limiter, so a gate in front reading the raw path holds; keys decode', async () => {
    const { secret, team, router } = setup();
    const handler = nodeAdminHandler(router);
    // The gate keeps everyone out of limiter 'secret', reading the path as sent.
    const port = await listen((req, res) => {
      if (req.url?.startsWith('/admin/api/limiters/secret')) {
        res.statusCode = 403;
        res.end();
      } else void handler(req, res);
    });
    const post = (path: string) =>
      fetch(`http://127.0.0.1:${port}/admin${path}`, {
        method: 'POST',
        headers: { authorization: TOKEN, ...JSON_TYPE },
      });
    for (let i = 0; i < 3; i++) await secret.tryAcquire('p');
    for (const spelling of ['%73ecret', '%73%65%63%72%65%74', 'secre%74', '%2Fsecret'])
      expect([spelling, (await post(`/api/limiters/${spelling}/keys/p/reset`)).status]).toEqual([spelling, 404]);
    expect((await post('/api/limiters/secret/keys/p/reset')).status).toBe(403);
    expect((await secret.peek('p')).remaining).toBe(0);
    // A '/' in a prefix is written %2F (upper case, its one spelling); keys are decoded once ('/' and ':').
    await team.tryAcquire('a/b');
    await team.tryAcquire('user:1');
    expect((await post('/api/limiters/team%2fa/keys/a%2Fb/reset')).status).toBe(404);
    expect((await post('/api/limiters/team%2Fa/keys/a%2Fb/reset')).status).toBe(200);
    expect((await post('/api/limiters/team%2Fa/keys/user%3A1/reset')).status).toBe(200);
    expect([(await team.peek('a/b')).remaining, (await team.peek('user:1')).remaining]).toEqual([3, 3]);
  });
});

describe('the audit names the limiter one way', () => {
  it('refused, failed and done events of one limiter carry its name; an unserved one none', async () => {
    const { actions, call } = setup();
    const path = '/api/limiters/team%2Fa/keys/k/reset';
    await call('POST', path, '', { 'sec-fetch-site': 'cross-site' }); // refused before authorize
    await call('POST', path, '', { authorization: 'Bearer wrong' }); // refused by authorize
    await call('POST', path, '{"x":1}'); // failed: an unknown field
    await call('POST', path, ''); // done
    await call('POST', '/api/limiters/nope/keys/k/reset', '', { 'sec-fetch-site': 'cross-site' });
    expect(actions.map((a) => [a.outcome, a.status, a.limiter])).toEqual([
      ['refused', 403, 'team/a'],
      ['refused', 403, 'team/a'],
      ['failed', 400, 'team/a'],
      ['done', 200, 'team/a'],
      ['refused', 403, undefined],
    ]);
  });
});

describe('an Origin is compared with the connection: scheme, host and port', () => {
  it('a Fetch request: the URL gives the scheme', async () => {
    const { api, router } = setup();
    const post = (url: string, origin: string) =>
      router.fetch(
        new Request(`${url}/admin/api/limiters/api/keys/k/reset`, {
          method: 'POST',
          headers: { authorization: TOKEN, ...JSON_TYPE, host: 'h', origin },
        }),
      );
    await api.tryAcquire('k');
    expect((await post('http://h', 'https://h:443')).status).toBe(403);
    expect((await post('http://h', 'https://h')).status).toBe(403);
    expect((await post('https://h', 'http://h')).status).toBe(403);
    expect((await post('https://h', 'http://h:443')).status).toBe(403);
    expect((await api.peek('k')).remaining).toBe(2);
    expect((await post('http://h', 'http://h:80')).status).toBe(200);
    expect((await post('https://h', 'https://h')).status).toBe(200);
  });

  it('the node handler over TLS: an http Origin of the same host and port is another origin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-subj', '/CN=127.0.0.1', '-days', '1', '-keyout', key, '-out', cert],
    ]);
    const { api, router } = setup();
    const handler = nodeAdminHandler(router);
    const server = httpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      void handler(req, res);
    });
    const port = await listenOn(closers, server);
    const post = (origin: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/admin/api/limiters/api/keys/k/reset',
            ca: readFileSync(cert),
            checkServerIdentity: () => undefined,
            headers: { authorization: TOKEN, ...JSON_TYPE, origin, 'content-length': '0' },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    await api.tryAcquire('k');
    expect(await post(`http://127.0.0.1:${port}`)).toBe(403);
    expect((await api.peek('k')).remaining).toBe(2);
    expect(await post(`https://127.0.0.1:${port}`)).toBe(200);
    expect((await api.peek('k')).remaining).toBe(3);
  });
});

describe('the fail-closed probe asks about cookies', () => {
  it('an authorize that reads an unset secret from a cookie is refused; one with a set secret is taken', () => {
    const { api } = setup();
    const cookies = (header: string) =>
      Object.fromEntries(header.split(';').flatMap((pair) => (pair.includes('=') ? [pair.trim().split('=')] : [])));
    const unset: string | undefined = undefined;
    const options = (authorize: AdminRouterOptions['authorize']) => ({ limiters: [api], authorize });
    for (const authorize of [
      // An empty Cookie header parses to no cookies: undefined === undefined.
      (r: Request) => {
        const header = r.headers.get('cookie');
        return header !== null && cookies(header).session === unset;
      },
      (r: Request) => cookies(r.headers.get('cookie') ?? '').token === String(unset),
    ])
      expect(() => adminRouter(options(authorize))).toThrow(
        expect.objectContaining({ name: 'SluiceRangeError', value: expect.stringMatching(/Cookie|cookies/) }),
      );
    const secret = 'a-session-secret-of-32-characters';
    expect(() => adminRouter(options((r) => cookies(r.headers.get('cookie') ?? '').session === secret))).not.toThrow();
  });
});
