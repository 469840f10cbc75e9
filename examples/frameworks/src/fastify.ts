/** The demo controller on Fastify 5: `PORT=3000 tsx src/fastify.ts`. */
import { byRoute, rateLimitHook } from '@sluice/core/http';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { demo, port, queryKey } from './serve.js';

const { limiters, announce } = demo('fastify');
const app = Fastify();
app.get(
  '/limiter/count',
  {
    onRequest: rateLimitHook<FastifyRequest, FastifyReply>({
      limiter: limiters.count,
      key: (req) => queryKey(req.url),
    }),
  },
  async (req) => ({ ok: true, key: (req.query as { key?: string }).key ?? null }),
);
app.get(
  '/limiter/rate',
  { onRequest: rateLimitHook<FastifyRequest, FastifyReply>({ limiter: limiters.rate, key: byRoute() }) },
  async () => ({ ok: true }),
);
const url = await app.listen({ port, host: '127.0.0.1' });
announce(url, () => app.close());
