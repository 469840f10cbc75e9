/**
 * @sluice/core/hono: rate limiting as Hono 4 middleware, on any runtime Hono runs on. Structural types
 * only: Hono is not a dependency, and nothing here imports a `node:` module.
 *
 * The key helpers (byIp, byUser, byRoute), the request context and the shared option types are imported
 * from `@sluice/core/http`, which imports no `node:` module either: it loads on every runtime this entry does.
 *
 * @module hono
 */
import type { Decision } from '../../foundation/decision.js';
import { SluiceTypeError } from '../../foundation/errors.js';
import type { OptionNames } from '../../foundation/options.js';
import { answerVerdict, createEvaluator } from '../http/evaluate.js';
import { responseAnswers, withHeaders } from '../http/fetch-response.js';
import { RATE_LIMIT_OPTIONS, type RateLimitOptions, limitedResponseOption } from '../http/options.js';
import { runInRequestContext } from '../http/context.js';
import { settleAfterBody } from '../http/response-end.js';
import type { RequestView } from '../http/view.js';
import { describe } from '../../foundation/validate.js';

/** The part of Hono's `Context` the middleware uses (Hono 4's Context fits). */
interface HonoContextLike {
  readonly req: {
    /** A request header by name. */
    header(name: string): string | undefined;
    readonly method: string;
    readonly path: string;
    /** The Fetch Request: its signal aborts when the client goes away. */
    readonly raw?: { readonly signal?: AbortSignal };
  };
  res: Response;
  /** The runtime's bindings; on `@hono/node-server` it holds the Node request (`incoming`). */
  readonly env?: unknown;
}

/** What Hono's per-runtime `getConnInfo` helpers return (only the part sluice reads). */
interface ConnInfoLike {
  readonly remote: { readonly address?: string | undefined };
}

/** Options of honoRateLimit; the after-response callbacks get the context and its Response, `(c, c.res)`. */
export interface HonoRateLimitOptions<C extends HonoContextLike> extends RateLimitOptions<C, Response> {
  /**
   * Your runtime adapter's `getConnInfo` (`hono/bun`, `hono/deno`, `hono/cloudflare-workers`,
   * `@hono/node-server/conninfo`): the client address byIp() and `onMissingKey: 'ip'` read. Without it,
   * on `@hono/node-server` the Node socket's peer is read; elsewhere there is none.
   * @default the Node socket's peer on `@hono/node-server`, else none
   */
  getConnInfo?: (c: C) => ConnInfoLike;
  /**
   * Answers a denied request instead of the default 429 JSON body; `headers` holds Retry-After and RateLimit.
   * @default a 429 with a LimitedBody as JSON
   */
  limitedResponse?: (c: C, decision: Decision, headers: Headers) => Response | Promise<Response>;
}

/** `@hono/node-server`'s bindings: `c.env.incoming` is the node:http request. */
function nodeServerPeer(env: unknown): string | undefined {
  const socket = (env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)?.incoming?.socket;
  return typeof socket?.remoteAddress === 'string' ? socket.remoteAddress : undefined;
}

const HONO_OPTIONS: OptionNames<HonoRateLimitOptions<HonoContextLike>> = {
  ...RATE_LIMIT_OPTIONS,
  getConnInfo: true,
  limitedResponse: true,
};

/**
 * Rate-limits Hono requests: `app.use('/api/*', honoRateLimit({ limiter, key }))`. Allowed requests go on
 * and their response carries the RateLimit headers; denied ones get a 429 Response with Retry-After, the
 * headers and the JSON body every sluice adapter sends. A fault its store's failMode did not absorb, or a
 * key function that throws, is thrown to Hono's error handler (`app.onError`).
 *
 * @example
 * import { getConnInfo } from '@hono/node-server/conninfo'
 * app.use('/api/*', honoRateLimit({ limiter, getConnInfo }))             // by client address
 * app.use('/me/*', honoRateLimit({ limiter, key: (c) => c.get('userId') })) // by user
 */
export function honoRateLimit<C extends HonoContextLike = HonoContextLike>(
  options: HonoRateLimitOptions<C>,
): (c: C, next: () => Promise<void>) => Promise<Response | undefined> {
  // The shared parser first: a missing or malformed options object is its error, naming it.
  const evaluate = createEvaluator<C, Response>(options, 'honoRateLimit', HONO_OPTIONS);
  const getConnInfo = options.getConnInfo;
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    throw new SluiceTypeError(
      'getConnInfo',
      getConnInfo,
      `getConnInfo must be your runtime adapter's getConnInfo function, got ${describe(getConnInfo)}`,
    );
  }
  const viewOf = (c: C): RequestView => ({
    header: (name) => c.req.header(name),
    peerAddress: getConnInfo !== undefined ? getConnInfo(c).remote.address : nodeServerPeer(c.env),
    method: c.req.method,
    path: c.req.path,
    signal: c.req.raw?.signal,
  });
  const limitedResponse = limitedResponseOption(options.limitedResponse);
  return async (c, next) => {
    const view = viewOf(c);
    return answerVerdict<Promise<Response | undefined>, Response>(await evaluate(c, view), {
      proceed: async (headers, settle) => {
        try {
          await runInRequestContext({ request: c, view }, next);
        } catch (error) {
          settle?.(new Response(null, { status: 500 }), { status: 500, completed: false });
          throw error;
        }
        if (headers.length > 0) c.res = withHeaders(c.res, headers);
        // Hono answers a handler's error with a 500 of its own (c.res), which settles as a failure; Hono itself
        // strips a HEAD response's body without reading it, which settleAfterBody knows from the method.
        if (settle !== undefined) c.res = settleAfterBody(c.res, settle, view);
        return undefined;
      },
      ...responseAnswers(limitedResponse && ((decision, headers) => limitedResponse(c, decision, headers))),
    });
  };
}
