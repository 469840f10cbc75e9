/**
 * The admin router's security defaults over real HTTP (docs/threat-model.md, "The admin router and its status
 * page"): cross-site and non-JSON writes refused before authorize; the URL built from a fixed origin, never the
 * Host header; no body read before authorize, and at most the bound after (memory measured under a flood of
 * anonymous 16 MB posts); basePath matched by whole segments; an authorize that cannot deny refused; a body
 * parsed by a framework in front used (Express) or refused with a message that says so (Fastify, Hono).
 */
import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Socket, connect } from 'node:net';
import { serve as honoServe } from '@hono/node-server';
import type { Limiter } from '@sluice/core';
import { type AdminRouterOptions, adminRouter, nodeAdminHandler } from '@sluice/core/admin';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../harness/closers.js';
import { adminLimiters, serve, stopping } from './fixture.js';

const TOKEN = 'Bearer 7c0d5a0e4b7f4e8a9f1e2d3c4b5a6978';
const closers = closeAfterEach();

/** Two limiters ('api' and 'secret', 3 per minute) and the audit of a router over them. */
function limiters() {
  const { limiters: made, actions, options } = adminLimiters(closers, ['api', 'secret'], { rule: 'api', token: TOKEN });
  const [api, secret] = made as [Limiter, Limiter];
  return { api, secret, actions, options };
}

type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

const servers = new Map<number, ReturnType<typeof createServer>>();
const createServerHook = {
  onConnection: (port: number, listener: (socket: Socket) => void) => servers.get(port)?.on('connection', listener),
};

async function listen(handler: NodeHandler): Promise<number> {
  const server = await serve(closers, handler);
  servers.set((server.address() as AddressInfo).port, server);
  return (server.address() as AddressInfo).port;
}

/** The router served on a free port: by node:http or Express through nodeAdminHandler, or by Hono's server. */
async function mountOn(
  mount: 'node' | 'express' | 'hono',
  options: (more?: Partial<AdminRouterOptions>) => AdminRouterOptions,
): Promise<number> {
  if (mount === 'hono') {
    const admin = adminRouter(options());
    const server = await new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = honoServe({ fetch: (request: Request) => admin.fetch(request), port: 0, hostname: '127.0.0.1' }, () =>
        resolve(s as ReturnType<typeof createServer>),
      );
    });
    closers.push(stopping(server));
    return (server.address() as AddressInfo).port;
  }
  if (mount === 'express') {
    const handler = nodeAdminHandler(adminRouter(options({ basePath: '' })));
    const app = express();
    app.use('/admin', (req, res) => void handler(req, res));
    return listen(app);
  }
  const handler = nodeAdminHandler(adminRouter(options()));
  return listen((req, res) => void handler(req, res));
}

/** A request written byte for byte (a forged Host, a dot segment): its status, headers and body. */
function raw(port: number, head: string, body = ''): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => {
      text += data;
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      socket.destroy();
      resolve({ status: Number(text.slice(9, 12)), head: text.slice(0, end), body: text.slice(end + 4) });
    });
    socket.on('error', reject);
    socket.write(`${head.replaceAll('\n', '\r\n')}\r\n\r\n${body}`);
  });
}

describe('cross-site and non-JSON writes are refused before authorize', () => {
  it('by Sec-Fetch-Site, by Origin, and by content type; reads, same-origin writes and clients without an Origin pass', async () => {
    const { api, actions, options } = limiters();
    let asked = 0;
    const router = adminRouter(
      options({
        authorize: (request) => {
          asked++;
          return request.headers.get('authorization') === TOKEN;
        },
      }),
    );
    asked = 0; // (the construction's fail-closed check asked it already)
    const port = await listen((req, res) => void nodeAdminHandler(router)(req, res));
    const base = `http://127.0.0.1:${port}/admin/api/limiters/api`;
    await api.block('k', 60_000);
    const write = (headers: Record<string, string>, path = '/lists', body = '{"list":"allow","entries":["k"]}') =>
      fetch(`${base}${path}`, { method: 'POST', headers: { authorization: TOKEN, ...headers }, body });
    const json = { 'content-type': 'application/json' };
    const attacks: Array<[string, Record<string, string>, number]> = [
      ['a page on another site (Sec-Fetch-Site)', { ...json, 'sec-fetch-site': 'cross-site' }, 403],
      ['a sibling subdomain (same-site is another origin)', { ...json, 'sec-fetch-site': 'same-site' }, 403],
      ['an older browser: an Origin of another host', { ...json, origin: 'http://evil.example' }, 403],
      ['an Origin of another port', { ...json, origin: 'http://127.0.0.1:1' }, 403],
      ['a sandboxed frame (Origin: null)', { ...json, origin: 'null' }, 403],
      ['a form or a simple fetch: text/plain', { 'content-type': 'text/plain' }, 415],
      ['a form: urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }, 415],
      ['no content type', {}, 415],
    ];
    for (const [what, headers, status] of attacks) {
      expect([what, (await write(headers)).status]).toEqual([what, status]);
      expect([what, (await write(headers, '/keys/k/unblock', '')).status]).toEqual([what, status]);
    }
    expect(asked).toBe(0);
    expect(await api.accessList()).toEqual([]);
    expect((await api.tryAcquire('k')).blocked).toBe(true);
    expect(actions.map((a) => a.outcome)).toEqual(Array(attacks.length * 2).fill('refused'));
    // What may pass: a read from anywhere (its answer is not readable cross-site), the page's own origin, a
    // client that sends no Origin (curl, a script, a server), an Origin naming the host it was sent to.
    const read = await fetch(base, { headers: { authorization: TOKEN, 'sec-fetch-site': 'cross-site' } });
    expect(read.status).toBe(200);
    expect((await write({ ...json, 'sec-fetch-site': 'same-origin' }, '/keys/k/unblock', '')).status).toBe(200);
    expect((await write(json, '/keys/k/reset', '')).status).toBe(200);
    expect(
      (await write({ 'content-type': 'application/json; charset=utf-8', origin: `http://127.0.0.1:${port}` })).status,
    ).toBe(200);
    expect((await api.tryAcquire('k')).access?.list).toBe('allow');
  });
});

describe('the URL is built from a fixed origin, never the Host header', () => {
  const forged = (path: string) =>
    [
      `POST ${path}/api/limiters/api/keys/x/reset HTTP/1.1`,
      'Host: h/admin/api/limiters/secret/keys/k/reset?',
      `Authorization: ${TOKEN}`,
      'Content-Type: application/json',
      'Content-Length: 0',
    ].join('\n');

  it.each(['node', 'express', 'hono'] as const)('a forged Host is refused and moves nothing, on %s', async (mount) => {
    const { api, secret, actions, options } = limiters();
    const port = await mountOn(mount, options);
    await secret.tryAcquire('k');
    await api.tryAcquire('x');
    // @hono/node-server refuses such a Host itself; the router refuses it wherever it runs.
    expect((await raw(port, forged('/admin'))).status).toBe(400);
    expect([(await secret.peek('k')).remaining, (await api.peek('x')).remaining]).toEqual([2, 2]);
    expect(actions).toEqual([]);
    // A well-formed Host of another name plays no part: the path alone says what is acted on.
    const other = forged('/admin').replace(/Host: .*/, 'Host: evil.example:8080');
    expect((await raw(port, other)).status).toBe(200);
    expect([(await secret.peek('k')).remaining, (await api.peek('x')).remaining]).toEqual([2, 3]);
    expect(actions.map((a) => [a.action, a.limiter, a.target, a.request])).toEqual([
      ['reset', 'api', 'x', `POST ${mount === 'express' ? '' : '/admin'}/api/limiters/api/keys/x/reset`],
    ]);
  });

  it('a runtime that built the URL from a forged Host (as Fetch servers do): the router refuses it', async () => {
    const { secret, options } = limiters();
    const admin = adminRouter(options());
    await secret.tryAcquire('k');
    const host = 'h/admin/api/limiters/secret/keys/k/reset?';
    const answer = await admin.fetch(
      new Request(`http://${host}/admin/api/limiters/api/keys/x/reset`, {
        method: 'POST',
        headers: { host, authorization: TOKEN, 'content-type': 'application/json' },
      }),
    );
    expect(answer.status).toBe(400);
    expect((await secret.peek('k')).remaining).toBe(2);
  });

  it('a path URL parsing would rewrite (dot segments, backslashes) is refused: a gate in front saw another', async () => {
    const { secret, options } = limiters();
    const handler = nodeAdminHandler(adminRouter(options()));
    // A gate in front keeps everyone out of limiter 'secret', reading the path as sent.
    const port = await listen((req, res) => {
      if (req.url?.startsWith('/admin/api/limiters/secret')) {
        res.statusCode = 403;
        res.end();
      } else void handler(req, res);
    });
    await secret.tryAcquire('k');
    for (const path of [
      '/x/../admin/api/limiters/secret/keys/k/reset',
      '/x/%2e%2E/admin/api/limiters/secret/keys/k/reset',
      '/admin/api/limiters/api/./../secret/keys/k/reset',
      '/admin/api/limiters/api\\..\\secret/keys/k/reset',
      'http://other/admin/api/limiters/secret/keys/k/reset',
    ]) {
      const answer = await raw(
        port,
        `POST ${path} HTTP/1.1\nHost: 127.0.0.1\nAuthorization: ${TOKEN}\nContent-Type: application/json\nContent-Length: 0`,
      );
      expect([path, answer.status]).toEqual([path, 400]);
    }
    expect((await secret.peek('k')).remaining).toBe(2);
  });
});

describe('authorize before the body; at most the bound after', () => {
  it.each(['node', 'express', 'hono'] as const)(
    'an anonymous post is answered 401 from its headers, before its body is sent, on %s',
    async (mount) => {
      const { options } = limiters();
      const port = await mountOn(mount, options);
      // 3 MB announced, 1 KB sent: the answer comes without the rest.
      const head = `POST /admin/api/limiters/api/lists HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: ${3 * 1024 * 1024}`;
      const answer = await raw(port, head, '{"list":"deny","entries":["'.padEnd(1024, 'a'));
      expect(answer.status).toBe(401);
      // Authorised, past the bound: 413 from Content-Length, nothing read; chunked: 413 once 4 MB came in.
      const authorised = `POST /admin/api/limiters/api/lists HTTP/1.1\nHost: 127.0.0.1\nAuthorization: ${TOKEN}\nContent-Type: application/json`;
      expect((await raw(port, `${authorised}\nContent-Length: ${16 * 1024 * 1024}`, '{')).status).toBe(413);
      const chunk = 'a'.repeat(1024 * 1024);
      const chunked = Array.from({ length: 5 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('');
      expect((await raw(port, `${authorised}\nTransfer-Encoding: chunked`, chunked)).status).toBe(413);
    },
  );

  it('32 anonymous 16 MB posts at once: answered 401 unread, the process barely grows (measured)', async () => {
    const { api, options } = limiters();
    const handler = nodeAdminHandler(adminRouter(options()));
    const rss = () => process.memoryUsage().rss;
    let peak = 0;
    const port = await listen((req, res) => {
      res.on('finish', () => {
        peak = Math.max(peak, rss());
      });
      void handler(req, res);
    });
    // What the server read off the wire, counted as each of the 32 connections closes.
    let read = 0;
    let closed = 0;
    const allClosed = new Promise<void>((resolve) =>
      createServerHook.onConnection(port, (socket) =>
        socket.on('close', () => {
          read += socket.bytesRead;
          peak = Math.max(peak, rss());
          if (++closed === 32) resolve();
        }),
      ),
    );
    // The clients run in a process of their own: only the server's memory is measured here. Each stops
    // sending once answered (an answer before the body is the point).
    const client = `
      const http = require('node:http');
      const body = Buffer.alloc(16 * 1024 * 1024, 97);
      const statuses = [];
      const done = (s) => { statuses.push(s); if (statuses.length === 32) console.log(JSON.stringify(statuses)); };
      for (let i = 0; i < 32; i++) {
        const req = http.request({ host: '127.0.0.1', port: ${port}, method: 'POST', path: '/admin/api/limiters/api/lists',
          headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
          done(res.statusCode); res.resume(); req.destroy();
        });
        req.on('error', () => {}); // the socket this client destroyed
        req.end(body);
      }`;
    const before = rss();
    const statuses = await new Promise<number[]>((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', client]);
      let out = '';
      child.stdout.on('data', (data: Buffer) => {
        out += data;
      });
      child.on('exit', () => (out === '' ? reject(new Error('the client printed nothing')) : resolve(JSON.parse(out))));
    });
    await allClosed;
    const grewMb = (Math.max(peak, rss()) - before) / 2 ** 20;
    const readMb = read / 2 ** 20;
    console.log(
      `32 anonymous 16 MB posts: read ${readMb.toFixed(1)} MB off the wire, rss grew ${grewMb.toFixed(1)} MB`,
    );
    expect(statuses).toEqual(Array(32).fill(401));
    // Of 512 MB sent, the server read what was in flight when it answered each (socket buffers), never the
    // bodies whole (c132e5b read all 512 MB, then answered 413); nothing read is held.
    expect(readMb).toBeLessThan(256);
    expect(grewMb).toBeLessThan(128);
    expect(await api.accessList()).toEqual([]);
  }, 60_000);
});

describe('basePath is matched by whole segments', () => {
  it("'/admin' serves '/admin' and '/admin/...', never '/adminXapi/...'", async () => {
    const { options } = limiters();
    const admin = adminRouter(options());
    const get = (path: string) =>
      admin.fetch(new Request(`http://127.0.0.1${path}`, { headers: { authorization: TOKEN } }));
    expect((await get('/adminXapi/limiters')).status).toBe(404);
    expect((await get('/admin-api/limiters')).status).toBe(404);
    expect((await get('/admin/api/limiters')).status).toBe(200);
    expect((await get('/admin')).status).toBe(200);
    expect((await get('/admin/')).status).toBe(200);
  });
});

describe('an authorize that cannot deny is refused', () => {
  it('the README shape with its secret unset, one that admits everyone, and an asynchronous one', async () => {
    const { api, options } = limiters();
    const unset: string | undefined = undefined;
    const refusals = [
      (r: Request) => r.headers.get('authorization') === `Bearer ${unset}`,
      (r: Request) => r.headers.get('x-api-key') === String(unset),
      () => true,
      (r: Request) => r.headers.get('authorization') !== 'Bearer wrong',
    ];
    for (const authorize of refusals)
      expect(() => adminRouter(options({ authorize }))).toThrow(
        expect.objectContaining({ name: 'SluiceRangeError', argument: 'authorize' }),
      );
    // Asynchronous: checked before the first request; the router then serves nothing.
    const router = adminRouter(options({ authorize: async () => true }));
    const answer = await router.fetch(
      new Request('http://127.0.0.1/admin/api/limiters/api/keys/k/block', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"ms":60000}',
      }),
    );
    expect(answer.status).toBe(500);
    expect(((await answer.json()) as { message: string }).message).toContain('no credentials');
    expect((await api.tryAcquire('k')).allowed).toBe(true);
    // One that denies them is taken, synchronous or not.
    expect(() => adminRouter(options())).not.toThrow();
    const asyncGood = adminRouter(options({ authorize: async (r) => r.headers.get('authorization') === TOKEN }));
    expect((await asyncGood.fetch(new Request('http://127.0.0.1/admin/api/limiters'))).status).toBe(401);
  });

  it('a 401 says what is missing: a WWW-Authenticate challenge and a message, nothing more', async () => {
    const { options } = limiters();
    for (const [challenge, expected] of [
      [undefined, 'Bearer realm="sluice admin"'],
      ['Basic realm="sluice admin", charset="UTF-8"', 'Basic realm="sluice admin", charset="UTF-8"'],
    ] as const) {
      const admin = adminRouter(options(challenge === undefined ? {} : { challenge }));
      const answer = await admin.fetch(new Request('http://127.0.0.1/admin/', { headers: { accept: 'text/html' } }));
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe(expected);
      expect(await answer.json()).toEqual({
        error: 'Unauthorized',
        message: 'the sluice admin router needs credentials; this request carried none',
      });
    }
    expect(() => adminRouter(options({ challenge: 'Basic\r\nSet-Cookie: x=1' }))).toThrow(
      expect.objectContaining({ argument: 'challenge' }),
    );
  });
});

describe('a body a framework parsed in front of the router', () => {
  const block = (base: string) =>
    fetch(`${base}/api/limiters/api/keys/k/block`, {
      method: 'POST',
      headers: { authorization: TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ ms: 60_000 }),
    });

  it('Express with express.json() in front: used as parsed', async () => {
    const { api, options } = limiters();
    const handler = nodeAdminHandler(adminRouter(options({ basePath: '' })));
    const app = express();
    app.use(express.json());
    app.use('/admin', (req, res) => void handler(req, res));
    const port = await listen(app);
    const answer = await block(`http://127.0.0.1:${port}/admin`);
    expect([answer.status, await answer.json()]).toEqual([200, { ok: true }]);
    expect((await api.tryAcquire('k')).blocked).toBe(true);
  });

  it('Fastify with its JSON parser, Hono after a middleware read it, Koa after a body parser: a 400 that says so', async () => {
    const { api, options } = limiters();
    const fastify = Fastify();
    const handler = nodeAdminHandler(adminRouter(options()));
    fastify.all('/admin/*', async (request, reply) => {
      reply.hijack();
      await handler(request.raw, reply.raw);
    });
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => fastify.close());
    const admin = adminRouter(options());
    const hono = new Hono();
    hono.use('/admin/*', async (c, next) => {
      await c.req.json().catch(() => undefined);
      await next();
    });
    hono.all('/admin/*', (c) => admin.fetch(c.req.raw));
    const server = await new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = honoServe({ fetch: hono.fetch, port: 0, hostname: '127.0.0.1' }, () =>
        resolve(s as ReturnType<typeof createServer>),
      );
    });
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    // Koa with a body parser of koa-bodyparser's kind: it reads ctx.req whole and keeps it on ctx.request.
    const koa = new Koa();
    const koaHandler = nodeAdminHandler(adminRouter(options()));
    koa.use(async (ctx, next) => {
      let text = '';
      for await (const chunk of ctx.req) text += chunk;
      (ctx.request as { body?: unknown }).body = JSON.parse(text);
      await next();
    });
    koa.use(async (ctx) => {
      ctx.respond = false;
      await koaHandler(ctx.req, ctx.res);
    });
    const koaPort = await listen(koa.callback());
    const ports = [(fastify.server.address() as AddressInfo).port, (server.address() as AddressInfo).port, koaPort];
    for (const port of ports) {
      const answer = await block(`http://127.0.0.1:${port}/admin`);
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { message: string }).message).toContain('body parser');
    }
    expect((await api.tryAcquire('k')).allowed).toBe(true);
  });
});
