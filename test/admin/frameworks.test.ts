/**
 * The admin router mounted in each framework sluice supports, the way its README section says (Hono and a
 * bare Fetch server take its Fetch handler; Koa and Fastify hand Node's request and response to
 * nodeAdminHandler; Express and node:http are in admin-router.test.ts): a read, a change and a refused
 * request answer the same everywhere.
 */
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { serve } from '@hono/node-server';
import { type Limiter, createLimiter, fixedWindow } from '@sluice/core';
import { type AdminRouter, adminRouter, nodeAdminHandler } from '@sluice/core/admin';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../harness/closers.js';

const closers = closeAfterEach();

type Mount = (router: (basePath: string) => AdminRouter) => Promise<string>;

const listen = async (server: ReturnType<typeof createServer>): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

const MOUNTS: Record<string, Mount> = {
  hono: async (router) => {
    const admin = router('/admin');
    const app = new Hono();
    app.all('/admin/*', (c) => admin.fetch(c.req.raw));
    app.all('/admin', (c) => admin.fetch(c.req.raw));
    const server = await new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () =>
        resolve(s as ReturnType<typeof createServer>),
      );
    });
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`;
  },
  fetch: async (router) => {
    const admin = router('/admin');
    const server = await new Promise<ReturnType<typeof createServer>>((resolve) => {
      const s = serve({ fetch: (request: Request) => admin.fetch(request), port: 0, hostname: '127.0.0.1' }, () =>
        resolve(s as ReturnType<typeof createServer>),
      );
    });
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`;
  },
  koa: async (router) => {
    const handler = nodeAdminHandler(router('/admin'));
    const app = new Koa();
    app.use(async (ctx, next) => {
      if (!ctx.path.startsWith('/admin')) return next();
      ctx.respond = false;
      await handler(ctx.req, ctx.res);
    });
    return `${await listen(createServer(app.callback()))}/admin`;
  },
  fastify: async (router) => {
    const handler = nodeAdminHandler(router('/admin'));
    const app = Fastify();
    // The router reads the body itself: Fastify must leave it unparsed.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));
    app.all('/admin/*', async (request, reply) => {
      reply.hijack();
      await handler(request.raw, reply.raw);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/admin`;
  },
};

describe.each(Object.keys(MOUNTS))('the admin router mounted in %s', (name) => {
  it('reads, changes and refuses as everywhere', async () => {
    const limiter: Limiter = createLimiter({
      rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }),
      prefix: 'api',
    });
    closers.push(() => limiter.close());
    const base = await (MOUNTS[name] as Mount)((basePath) =>
      adminRouter({ limiters: [limiter], authorize: (r) => r.headers.get('authorization') === 'Bearer t', basePath }),
    );
    const auth = { authorization: 'Bearer t' };
    const listed = await fetch(`${base}/api/limiters`, { headers: auth });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { limiters: Array<{ name: string }> }).limiters[0]?.name).toBe('api');
    const denied = await fetch(`${base}/api/limiters/api/lists`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ list: 'deny', entries: ['tenant-9'] }),
    });
    expect(denied.status).toBe(200);
    expect((await limiter.tryAcquire('tenant-9')).access?.list).toBe('deny');
    const refused = await fetch(`${base}/api/limiters/api/keys/tenant-9/reset`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    expect(refused.status).toBe(401);
    const page = await fetch(`${base}/`, { headers: auth });
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
  });
});
