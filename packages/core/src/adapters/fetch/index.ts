/**
 * @sluice/core/fetch: rate limiting for Fetch-API handlers, `(request: Request) => Response`: Next.js route
 * handlers, Bun.serve, Deno.serve, Cloudflare Workers, Node's own Request/Response. No `node:` import.
 *
 * The key helpers (byIp, byUser, byRoute), the request context and the shared option types are imported
 * from `@sluice/core/http`, which imports no `node:` module either: it loads on every runtime this entry does.
 *
 * @module fetch
 */
import type { Decision } from '../../foundation/decision.js';
import { SluiceTypeError } from '../../foundation/errors.js';
import type { OptionNames } from '../../foundation/options.js';
import { answerVerdict, createEvaluator } from '../http/evaluate.js';
import { responseAnswers, withHeaders } from '../http/fetch-response.js';
import { RATE_LIMIT_OPTIONS, type RateLimitOptions, limitedResponseOption } from '../http/options.js';
import { runInRequestContext } from '../http/context.js';
import { settleAfterBody } from '../http/response-end.js';
import { type RequestView, pathOf } from '../http/view.js';
import { describe } from '../../foundation/validate.js';

/** The part of a Fetch `Request` sluice reads (the global Request of every runtime fits). */
interface FetchRequestLike {
  /** The request headers (`Headers`): read by name. */
  readonly headers: {
    /** A header by name, or null. */
    get(name: string): string | null;
  };
  readonly method: string;
  readonly url: string;
  /** Aborted by the runtime when the client goes away: a waiting decision stops, an unread body is settled. */
  readonly signal?: AbortSignal;
}

/** Options of fetchRateLimit; the after-response callbacks get the request and the handler's Response. */
export interface FetchRateLimitOptions<Req extends FetchRequestLike, Rest extends unknown[]>
  extends RateLimitOptions<Req, Response> {
  /**
   * The client's address, from what the runtime passes beside the request. A Fetch `Request` carries none:
   * the runtime gives it to the handler's other arguments (Deno.serve: `(req, info) =>
   * info.remoteAddr.hostname`; Bun.serve: `(req, server) => server.requestIP(req)?.address`; behind
   * Cloudflare, `(req) => req.headers.get('cf-connecting-ip') ?? undefined`). byIp() and `onMissingKey: 'ip'`
   * read it; without it and without a `key`, fetchRateLimit refuses to start (every request would have no key).
   */
  address?: (request: Req, ...rest: Rest) => string | undefined;
  /**
   * Answers a denied request instead of the default 429 JSON body; `headers` holds Retry-After and RateLimit.
   * @default a 429 with a LimitedBody as JSON
   */
  limitedResponse?: (request: Req, decision: Decision, headers: Headers) => Response | Promise<Response>;
}

/** A Fetch handler: the request, and whatever else the runtime passes (Deno's info, Bun's server, a Worker's env). */
export type FetchHandler<Req, Rest extends unknown[]> = (request: Req, ...rest: Rest) => Response | Promise<Response>;

const FETCH_OPTIONS: OptionNames<FetchRateLimitOptions<FetchRequestLike, unknown[]>> = {
  ...RATE_LIMIT_OPTIONS,
  address: true,
  limitedResponse: true,
};

/**
 * Wraps a Fetch-API handler: `fetchRateLimit(options)(handler)` is `(request, ...rest) => Promise<Response>`.
 * Allowed: the handler's Response with the RateLimit headers added. Limited: a 429 Response with
 * Retry-After, the headers and the JSON body every sluice adapter sends. A fault its store's failMode did
 * not absorb, or a key function that throws, rejects: the runtime answers it as any handler error.
 *
 * @example
 * export const GET = fetchRateLimit({ limiter, key: (req) => req.headers.get('x-api-key') ?? undefined })(
 *   async (req) => Response.json({ ok: true }),
 * )
 */
export function fetchRateLimit<Req extends FetchRequestLike = Request, Rest extends unknown[] = []>(
  options: FetchRateLimitOptions<Req, Rest>,
): (handler: FetchHandler<Req, Rest>) => (request: Req, ...rest: Rest) => Promise<Response> {
  // The shared parser first: a missing or malformed options object is its error, naming it.
  const evaluate = createEvaluator<Req, Response>(options, 'fetchRateLimit', FETCH_OPTIONS);
  const address = options.address;
  if (address !== undefined && typeof address !== 'function') {
    throw new SluiceTypeError(
      'address',
      address,
      `address must be a function of the request, got ${describe(address)}`,
    );
  }
  if (options.key === undefined && address === undefined && options.onMissingKey !== 'skip') {
    throw new SluiceTypeError(
      'key',
      undefined,
      'fetchRateLimit needs a key or an address: a Fetch Request carries no client address, so byIp() (the ' +
        "default key) would find none. Pass key, or address: (req, ...rest) => the runtime's client address",
    );
  }
  const viewOf = (request: Req, rest: Rest): RequestView => ({
    header: (name) => request.headers.get(name) ?? undefined,
    peerAddress: address === undefined ? undefined : address(request, ...rest),
    method: request.method,
    path: pathOf(request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')),
    signal: request.signal,
  });
  const limitedResponse = limitedResponseOption(options.limitedResponse);
  return (handler) => {
    if (typeof handler !== 'function')
      throw new SluiceTypeError(
        'handler',
        handler,
        `fetchRateLimit(options) wraps a handler function, got ${describe(handler)}`,
      );
    return async (request, ...rest) => {
      const view = viewOf(request, rest);
      return answerVerdict<Promise<Response>, Response>(await evaluate(request, view), {
        proceed: async (headers, settle) => {
          let response: Response;
          try {
            response = await runInRequestContext({ request, view }, () => handler(request, ...rest));
          } catch (error) {
            // The runtime answers a handler that threw (a 500): the request failed.
            settle?.(new Response(null, { status: 500 }), { status: 500, completed: false });
            throw error;
          }
          const answered = withHeaders(response, headers);
          return settle === undefined ? answered : settleAfterBody(answered, settle, request);
        },
        ...responseAnswers(limitedResponse && ((decision, headers) => limitedResponse(request, decision, headers))),
      });
    };
  };
}
