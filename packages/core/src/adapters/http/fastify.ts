import type { Decision } from '../../foundation/decision.js';
import { runInRequestContext } from './context.js';
import { type Verdict, answerVerdict, createEvaluator } from './evaluate.js';
import type { OptionNames } from '../../foundation/options.js';
import { RATE_LIMIT_OPTIONS, limitedBody, limitedResponseOption, type RateLimitOptions } from './options.js';
import type { FastifyReplyLike, HttpRequestLike } from './request.js';
import { settleOnNodeResponse } from './response-end.js';
import { nodeRequestView } from './view.js';

/** Options of fastifyRateLimit and rateLimitHook; the after-response callbacks get the request and the reply. */
export interface FastifyRateLimitOptions<Req, Reply> extends RateLimitOptions<Req, Reply> {
  /**
   * Sends the response to a denied request instead of the default 429 JSON body (headers already set).
   * @default a 429 with a LimitedBody as JSON
   */
  limitedResponse?: (request: Req, reply: Reply, decision: Decision) => void;
}

const FASTIFY_OPTIONS: OptionNames<FastifyRateLimitOptions<unknown, unknown>> = {
  ...RATE_LIMIT_OPTIONS,
  limitedResponse: true,
};

/** A Fastify hook in callback style: `done()` goes on with the request, `done(error)` fails it. */
export type FastifyHookDone = (error?: Error) => void;

/**
 * Rate-limits Fastify requests as an `onRequest` hook: allowed requests carry the RateLimit headers,
 * denied ones are answered 429 with Retry-After, the headers and a JSON body. A fault its store's
 * failMode did not absorb is passed to Fastify, which answers it with its error handler. Callback style,
 * so the rest of the request (`done()`) runs in its request context, where decorators keyed by request read it.
 *
 * @example
 * app.addHook('onRequest', rateLimitHook({ limiter, key: byIp() }))
 */
export function rateLimitHook<
  Req extends HttpRequestLike = HttpRequestLike,
  Reply extends FastifyReplyLike = FastifyReplyLike,
>(options: FastifyRateLimitOptions<Req, Reply>): (request: Req, reply: Reply, done: FastifyHookDone) => void {
  const evaluate = createEvaluator<Req, Reply>(options, 'rateLimitHook', FASTIFY_OPTIONS);
  const limitedResponse = limitedResponseOption(options.limitedResponse);
  /** Answers a verdict that ends the request; true when the request goes on. */
  const send = (reply: Reply, status: number, body: unknown): false => {
    reply.code(status);
    reply.send(body);
    return false;
  };
  const respond = (verdict: Verdict<Reply>, request: Req, reply: Reply): boolean =>
    answerVerdict<boolean, Reply>(verdict, {
      proceed: (headers, settle) => {
        for (const [name, value] of headers) reply.header(name, value);
        if (settle !== undefined) settleOnNodeResponse(reply.raw, reply, settle);
        return true;
      },
      reject: (body) => send(reply, 400, body),
      limit: (decision, headers) => {
        for (const [name, value] of headers) reply.header(name, value);
        if (limitedResponse === undefined) return send(reply, 429, limitedBody(decision));
        limitedResponse(request, reply, decision);
        return false;
      },
    });
  return (request, reply, done) => {
    const view = nodeRequestView(request, reply.raw);
    evaluate(request, view).then(
      (verdict) => {
        let proceed: boolean;
        try {
          proceed = respond(verdict, request, reply);
        } catch (error) {
          done(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        // A hook that answered calls no done(): Fastify then skips the rest of the request.
        if (proceed) runInRequestContext({ request, view }, () => done());
      },
      (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
    );
  };
}

/** The part of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  // Method syntax on purpose: its parameters compare bivariantly, so Fastify's generic overloads fit.
  /** Registers an onRequest hook (Fastify 4 and 5). */
  addHook(
    name: 'onRequest',
    hook: (request: HttpRequestLike, reply: FastifyReplyLike, done: FastifyHookDone) => void,
  ): unknown;
}

/** The options Fastify's `register` takes for itself and passes on to the plugin with its own. */
const REGISTER_OPTIONS = ['prefix', 'logLevel', 'logSerializers'];

/**
 * The same hook as a Fastify plugin, applied to the scope it is registered in and its children
 * (`app.register(fastifyRateLimit, { limiter })`). It skips Fastify's encapsulation the way
 * fastify-plugin does, so registering it on the root limits every route. Fastify's own register options
 * (`prefix`, `logLevel`, `logSerializers`) are left to Fastify; any other unknown option is refused.
 */
export const fastifyRateLimit = Object.assign(
  async function fastifyRateLimit(
    instance: FastifyInstanceLike,
    options: FastifyRateLimitOptions<HttpRequestLike, FastifyReplyLike>,
  ): Promise<void> {
    const own =
      typeof options === 'object' && options !== null
        ? Object.fromEntries(Object.entries(options).filter(([name]) => !REGISTER_OPTIONS.includes(name)))
        : options;
    instance.addHook('onRequest', rateLimitHook(own as typeof options));
  },
  { [Symbol.for('skip-override')]: true },
);
