/**
 * @sluice/core/koa: rate limiting as Koa 3 middleware. Structural types only: Koa is not a dependency.
 *
 * The key helpers (byIp, byUser, byRoute), the request context and the shared option types are imported
 * from `@sluice/core/http`.
 *
 * @module koa
 */
import type { Decision } from '../../foundation/decision.js';
import type { OptionNames } from '../../foundation/options.js';
import { answerVerdict, createEvaluator } from '../http/evaluate.js';
import { RATE_LIMIT_OPTIONS, type RateLimitOptions, limitedBody, limitedResponseOption } from '../http/options.js';
import { runInRequestContext } from '../http/context.js';
import { settleOnNodeResponse } from '../http/response-end.js';
import { type RequestView, lazyClientGone } from '../http/view.js';

/** The part of Koa's `Context` the middleware uses (Koa 3's Context fits). */
interface KoaContextLike {
  /** A request header ('' when absent). */
  get(field: string): string;
  /** Sets a response header. */
  set(field: string, value: string): void;
  /** The client address: the socket's, or with `app.proxy` the one Koa reads from X-Forwarded-For. */
  readonly ip: string;
  readonly method: string;
  readonly path: string;
  status: number;
  body: unknown;
  /** The node response (after-response accounting listens to it: Koa sends the body after the middleware). */
  readonly res?: unknown;
}

/**
 * Options of koaRateLimit. The after-response callbacks get the context twice, `(ctx, ctx)`: its status,
 * `ctx.state` and `ctx.response` are all there.
 */
export interface KoaRateLimitOptions<Ctx extends KoaContextLike> extends RateLimitOptions<Ctx, Ctx> {
  /**
   * Answers a denied request instead of the default 429 JSON body (the RateLimit headers and Retry-After are set).
   * @default a 429 with a LimitedBody as JSON
   */
  limitedResponse?: (ctx: Ctx, decision: Decision) => void | Promise<void>;
}

const KOA_OPTIONS: OptionNames<KoaRateLimitOptions<KoaContextLike>> = { ...RATE_LIMIT_OPTIONS, limitedResponse: true };

/**
 * Rate-limits Koa requests: `app.use(koaRateLimit({ limiter, key }))`. Allowed requests go on with the
 * RateLimit headers set; denied ones get 429 with Retry-After, the headers and the JSON body every sluice
 * adapter sends. A fault its store's failMode did not absorb, or a key function that throws, is thrown to
 * Koa, which answers it through its error handling (`app.on('error')`, a 500).
 *
 * @example
 * app.use(koaRateLimit({ limiter, key: (ctx) => ctx.state.user?.id }))
 */
export function koaRateLimit<Ctx extends KoaContextLike = KoaContextLike>(
  options: KoaRateLimitOptions<Ctx>,
): (ctx: Ctx, next: () => Promise<unknown>) => Promise<void> {
  const viewOf = (ctx: Ctx): RequestView => {
    const signal = lazyClientGone(ctx.res);
    return {
      header: (name) => ctx.get(name) || undefined,
      peerAddress: ctx.ip || undefined,
      method: ctx.method,
      path: ctx.path,
      get signal() {
        return signal();
      },
    };
  };
  const evaluate = createEvaluator<Ctx, Ctx>(options, 'koaRateLimit', KOA_OPTIONS);
  const limitedResponse = limitedResponseOption(options.limitedResponse);
  return async (ctx, next) => {
    const view = viewOf(ctx);
    const answer = (status: number, body: unknown): void => {
      ctx.status = status;
      ctx.body = body;
    };
    await answerVerdict<Promise<void>, Ctx>(await evaluate(ctx, view), {
      proceed: async (headers, settle) => {
        for (const [name, value] of headers) ctx.set(name, value);
        // Listening before the rest runs: a client that goes away meanwhile closes the connection first.
        if (settle !== undefined) settleOnNodeResponse(ctx.res, ctx, settle);
        try {
          await runInRequestContext({ request: ctx, view }, next);
        } catch (error) {
          // Koa answers a thrown error itself; the request failed.
          settle?.(ctx, { status: 500, completed: false });
          throw error;
        }
      },
      reject: async (body) => answer(400, body),
      limit: async (decision, headers) => {
        for (const [name, value] of headers) ctx.set(name, value);
        if (limitedResponse !== undefined) await limitedResponse(ctx, decision);
        else answer(429, limitedBody(decision));
      },
    });
  };
}
