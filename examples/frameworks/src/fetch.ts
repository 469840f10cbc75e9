/**
 * The demo controller as Fetch-API handlers (the shape of Next.js route handlers, Bun.serve, Deno.serve),
 * served here on Node by @hono/node-server: `PORT=3000 tsx src/fetch.ts`.
 */
import { fetchRateLimit } from '@sluice/core/fetch';
import { byRoute } from '@sluice/core/http';
import { type HttpBindings, serve } from '@hono/node-server';
import { demo, port, queryKey } from './serve.js';

const { limiters, announce } = demo('fetch');
const address = (_req: Request, env: HttpBindings) => env.incoming.socket.remoteAddress;
const count = fetchRateLimit<Request, [HttpBindings]>({
  limiter: limiters.count,
  key: (req) => queryKey(req.url),
  address,
})(async (req) => Response.json({ ok: true, key: new URL(req.url).searchParams.get('key') }));
const rate = fetchRateLimit<Request, [HttpBindings]>({ limiter: limiters.rate, key: byRoute(), address })(async () =>
  Response.json({ ok: true }),
);

const handler = (req: Request, env: HttpBindings): Promise<Response> | Response => {
  const { pathname } = new URL(req.url);
  if (pathname === '/limiter/count') return count(req, env);
  if (pathname === '/limiter/rate') return rate(req, env);
  return new Response('not found', { status: 404 });
};
const server = serve({ fetch: handler as never, port, hostname: '127.0.0.1' }, (info) =>
  announce(`http://127.0.0.1:${info.port}`, () => new Promise((r) => server.close(r))),
);
