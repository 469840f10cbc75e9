/** The demo controller on Koa 3: `PORT=3000 tsx src/koa.ts`. */
import type { AddressInfo } from 'node:net';
import { byRoute } from '@sluice/core/http';
import { koaRateLimit } from '@sluice/core/koa';
import Koa from 'koa';
import { demo, port, queryKey } from './serve.js';

const { limiters, announce } = demo('koa');
const count = koaRateLimit<Koa.Context>({ limiter: limiters.count, key: (ctx) => queryKey(ctx.url) });
const rate = koaRateLimit<Koa.Context>({ limiter: limiters.rate, key: byRoute() });
const app = new Koa();
app.use(async (ctx, next) => {
  if (ctx.path === '/limiter/count')
    return count(ctx, async () => void (ctx.body = { ok: true, key: ctx.query.key ?? null }));
  if (ctx.path === '/limiter/rate') return rate(ctx, async () => void (ctx.body = { ok: true }));
  return next();
});
const server = app.listen(port, '127.0.0.1', () =>
  announce(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, () => new Promise((r) => server.close(r))),
);
