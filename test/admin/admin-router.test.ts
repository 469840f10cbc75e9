/**
 * The admin router over real HTTP (node:http through nodeAdminHandler, and Express mounted under a path):
 * every endpoint against a real limiter, authorisation refused with nothing changed, every change audited,
 * bad input answered 400/404/405/413 without touching state.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AdminAction, adminRouter, nodeAdminHandler } from '@sluice/core/admin';
import { createLimiter, fixedWindow } from '@sluice/core';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';

const TOKEN = 'Bearer s3cret';
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A limiter of 3 per minute behind the router on a node:http server; its URL, the limiter and the audit. */
async function serve(mount: 'node' | 'express' = 'node') {
  const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 3, windowMs: 60_000 }), prefix: 'api' });
  const actions: AdminAction[] = [];
  const basePath = mount === 'express' ? '' : '/admin';
  const router = adminRouter({
    limiters: [limiter],
    authorize: (request) => request.headers.get('authorization') === TOKEN,
    basePath,
    onAction: (action) => actions.push(action),
  });
  const handler = nodeAdminHandler(router);
  let server: ReturnType<typeof createServer>;
  if (mount === 'express') {
    const app = express();
    app.use('/admin', (req, res) => void handler(req, res));
    server = createServer(app);
  } else server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`;
  closers.push(async () => {
    await new Promise((resolve) => server.close(resolve));
    await limiter.close();
  });
  const call = async (method: string, path: string, body?: unknown, auth: string | null = TOKEN) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(auth === null ? {} : { authorization: auth }),
        // Every write is JSON, whether or not it has a body (a reset has none).
        ...(method === 'GET' ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: response.status, body: parsed as Record<string, unknown>, headers: response.headers };
  };
  return { limiter, actions, call, base };
}

describe.each(['node', 'express'] as const)('the admin router on %s', (mount) => {
  it('lists limiters, inspects a key as peek does, and acts on it; every change is audited', async () => {
    const { limiter, actions, call } = await serve(mount);
    expect((await call('GET', '/api/limiters')).body).toEqual({
      limiters: [
        {
          name: 'api',
          configVersion: 1,
          rules: [{ kind: 'fixedWindow', name: 'api', limit: 3, params: { limit: 3, windowMs: 60_000 } }],
        },
      ],
    });
    await limiter.tryAcquire('user:1');
    const key = encodeURIComponent('user:1');
    const inspected = await call('GET', `/api/limiters/api/keys/${key}`);
    expect(inspected.body.decision).toMatchObject({ allowed: true, remaining: 2, limit: 3 });
    expect((inspected.body.decision as { remaining: number }).remaining).toBe((await limiter.peek('user:1')).remaining);
    expect((await call('POST', `/api/limiters/api/keys/${key}/block`, { ms: 60_000 })).status).toBe(200);
    expect(await limiter.tryAcquire('user:1')).toMatchObject({ allowed: false, blocked: true });
    expect((await call('POST', `/api/limiters/api/keys/${key}/unblock`)).status).toBe(200);
    expect((await call('POST', `/api/limiters/api/keys/${key}/reset`)).status).toBe(200);
    expect((await limiter.peek('user:1')).remaining).toBe(3);
    const rules = [{ kind: 'fixedWindow', name: 'api', params: { limit: 10, windowMs: 60_000 } }];
    expect((await call('PUT', `/api/limiters/api/keys/${key}/override`, { rules })).status).toBe(200);
    expect(await limiter.tryAcquire('user:1')).toMatchObject({ limit: 10, override: true });
    expect((await call('GET', '/api/limiters/api/overrides')).body).toEqual({
      overrides: [{ key: 'user:1', rules: [{ kind: 'fixedWindow', name: 'api', limit: 10 }] }],
      cursor: null,
    });
    expect((await call('DELETE', `/api/limiters/api/keys/${key}/override`)).status).toBe(200);
    expect(
      (await call('POST', '/api/limiters/api/lists', { list: 'deny', entries: ['tenant-13'], reason: 'scan' })).status,
    ).toBe(200);
    expect((await limiter.tryAcquire('tenant-13')).access).toEqual({
      list: 'deny',
      entry: 'tenant-13',
      reason: 'scan',
    });
    expect((await call('GET', '/api/limiters/api/lists')).body).toEqual({
      entries: [{ entry: 'tenant-13', list: 'deny', reason: 'scan' }],
    });
    expect((await call('DELETE', '/api/limiters/api/lists', { entries: ['tenant-13'] })).body).toEqual({
      removed: 1,
    });
    for (let i = 0; i < 6; i++) await limiter.tryAcquire('hot');
    const top = await call('GET', '/api/limiters/api/top?n=1');
    expect(top.body).toMatchObject({ limiter: 'api', minutes: 5, keys: [{ denied: 3, hashed: true }] });
    expect((top.body.keys as Array<{ key: string }>)[0]?.key).toBe(await limiter.keyHash('hot'));
    expect(actions.map((a) => [a.action, a.outcome, a.target])).toEqual([
      ['block', 'done', 'user:1'],
      ['unblock', 'done', 'user:1'],
      ['reset', 'done', 'user:1'],
      ['override', 'done', 'user:1'],
      ['remove-override', 'done', 'user:1'],
      ['deny', 'done', ['tenant-13']],
      ['unlist', 'done', ['tenant-13']],
    ]);
    expect(actions.every((a) => a.limiter === 'api' && a.status === 200)).toBe(true);
  });

  it('without authorisation: 401 (no credentials) or 403 (wrong ones), nothing changed, the attempt audited', async () => {
    const { limiter, actions, call } = await serve(mount);
    const none = await call('POST', '/api/limiters/api/lists', { list: 'deny', entries: ['0.0.0.0/0'] }, null);
    expect(none.status).toBe(401);
    const wrong = await call('POST', '/api/limiters/api/keys/k/block', { ms: 1_000 }, 'Bearer guess');
    expect(wrong.status).toBe(403);
    expect((await call('GET', '/api/limiters', undefined, null)).status).toBe(401);
    expect((await call('GET', '/', undefined, null)).status).toBe(401);
    expect(await limiter.accessList()).toEqual([]);
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    expect(actions.map((a) => [a.action, a.outcome, a.status])).toEqual([
      ['list', 'refused', 401],
      ['block', 'refused', 403],
    ]);
  });

  it('bad input: a CIDR that does not parse, too many entries, a body past 4 MB, bad JSON, unknown paths and methods', async () => {
    const { limiter, actions, call } = await serve(mount);
    const badRange = await call('POST', '/api/limiters/api/lists', { list: 'deny', entries: ['10.0.0.0/33'] });
    expect(badRange.status).toBe(400);
    expect(badRange.body).toMatchObject({ argument: 'entries' });
    const many = await call('POST', '/api/limiters/api/lists', {
      list: 'deny',
      entries: Array.from({ length: 10_001 }, (_, i) => `k${i}`),
    });
    expect(many.status).toBe(400);
    // Past the 4 MB bound (a list of 400,000 entries): refused, its bytes never held.
    const huge = JSON.stringify({ list: 'deny', entries: Array.from({ length: 400_000 }, (_, i) => `key-${i}`) });
    expect(await call('POST', '/api/limiters/api/lists', huge)).toMatchObject({
      status: 413,
      body: { error: 'Payload Too Large' },
    });
    expect((await call('POST', '/api/limiters/api/keys/k/block', '{not json')).status).toBe(400);
    expect((await call('POST', '/api/limiters/api/keys/k/block', { ms: -5 })).status).toBe(400);
    expect(
      (await call('PUT', '/api/limiters/api/keys/k/override', { rules: [{ kind: 'nope', params: {} }] })).status,
    ).toBe(400);
    expect((await call('GET', '/api/limiters/nope')).status).toBe(404);
    expect((await call('GET', '/api/limiters/api/keys/%E0%A4%A')).status).toBe(400);
    expect((await call('DELETE', '/api/limiters/api/keys/k/reset')).status).toBe(405);
    expect((await call('GET', '/api/limiters/api/top?n=0')).status).toBe(400);
    expect(await limiter.accessList()).toEqual([]);
    expect((await limiter.peek('k')).remaining).toBe(3);
    expect(actions.every((a) => a.outcome === 'failed')).toBe(true);
  });
});

describe('adminRouter options', () => {
  it('refuses to be made without authorize, limiters, or with two limiters of one prefix', () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), prefix: 'x' });
    expect(() => adminRouter({ limiters: [limiter] } as never)).toThrow(
      expect.objectContaining({ argument: 'authorize' }),
    );
    expect(() => adminRouter({ limiters: [], authorize: () => true })).toThrow(
      expect.objectContaining({ argument: 'limiters' }),
    );
    expect(() => adminRouter({ limiters: [limiter, limiter], authorize: () => true })).toThrow(
      expect.objectContaining({ argument: 'limiters' }),
    );
    // A misspelt option is refused by name: 'basepath' would have served the router at the root.
    const authorize = (request: Request) => request.headers.get('authorization') === TOKEN;
    expect(() => adminRouter({ limiters: [limiter], authorize, basepath: '/admin' } as never)).toThrow(
      expect.objectContaining({ argument: 'basepath' }),
    );
    expect(() => adminRouter({ limiters: [limiter], authorize, basePath: 'admin' })).toThrow(
      expect.objectContaining({ argument: 'basePath' }),
    );
  });
});
