import type { Decision } from '../decision.js';
import { createEvaluator } from './evaluate.js';
import { limitedBody, onLimitedOption, type RateLimitOptions } from './options.js';
import type { FastifyReplyLike, HttpRequestLike } from './request.js';
import { nodeRequestView } from './view.js';

export interface FastifyRateLimitOptions<Req, Reply> extends RateLimitOptions<Req> {
  /** Sends the response to a denied request instead of the default 429 JSON body (headers already set). */
  onLimited?: (request: Req, reply: Reply, decision: Decision) => void;
}

/**
 * Rate-limits Fastify requests as an `onRequest` hook: allowed requests carry the RateLimit headers,
 * denied ones are answered 429 with Retry-After, the headers and a JSON body. A fault its store's
 * failMode did not absorb is thrown to Fastify, which answers it with its error handler.
 *
 * @example
 * app.addHook('onRequest', rateLimitHook({ limiter, key: byIp() }))
 */
export function rateLimitHook<Req extends HttpRequestLike = HttpRequestLike, Reply extends FastifyReplyLike = FastifyReplyLike>(
  options: FastifyRateLimitOptions<Req, Reply>,
): (request: Req, reply: Reply) => Promise<Reply | undefined> {
  const evaluate = createEvaluator(options, nodeRequestView);
  const onLimited = onLimitedOption(options.onLimited);
  return async (request, reply) => {
    const verdict = await evaluate(request);
    if (verdict.kind === 'skipped') return undefined;
    // Fastify's rule for an async hook that answers: send, then return the reply.
    if (verdict.kind === 'rejected') {
      reply.code(400);
      reply.send(verdict.body);
      return reply;
    }
    for (const [name, value] of verdict.headers) reply.header(name, value);
    if (verdict.kind === 'allowed') return undefined;
    if (onLimited !== undefined) onLimited(request, reply, verdict.decision);
    else {
      reply.code(429);
      reply.send(limitedBody(verdict.decision));
    }
    return reply;
  };
}

/** The part of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  // Method syntax on purpose: its parameters compare bivariantly, so Fastify's generic overloads fit.
  addHook(name: 'onRequest', hook: (request: HttpRequestLike, reply: FastifyReplyLike) => Promise<unknown>): unknown;
}

/**
 * The same hook as a Fastify plugin, applied to the scope it is registered in and its children
 * (`app.register(fastifyRateLimit, { limiter })`). It skips Fastify's encapsulation the way
 * fastify-plugin does, so registering it on the root limits every route.
 */
export const fastifyRateLimit = Object.assign(
  async function fastifyRateLimit(instance: FastifyInstanceLike, options: FastifyRateLimitOptions<HttpRequestLike, FastifyReplyLike>): Promise<void> {
    instance.addHook('onRequest', rateLimitHook(options));
  },
  { [Symbol.for('skip-override')]: true },
);
