/** The demo controller on Hono 4 (@hono/node-server): `PORT=3000 tsx src/hono.ts`. */
import { byRoute } from '@sluice/core/http';
import { honoRateLimit } from '@sluice/core/hono';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono } from 'hono';
import { demo, port, queryKey } from './serve.js';

const { limiters, announce } = demo('hono');
const app = new Hono();
app.get(
  '/limiter/count',
  honoRateLimit({ limiter: limiters.count, key: (c) => queryKey(c.req.url), getConnInfo }),
  (c) => c.json({ ok: true, key: c.req.query('key') ?? null }),
);
app.get('/limiter/rate', honoRateLimit({ limiter: limiters.rate, key: byRoute(), getConnInfo }), (c) =>
  c.json({ ok: true }),
);
const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) =>
  announce(`http://127.0.0.1:${info.port}`, () => new Promise((r) => server.close(r))),
);
