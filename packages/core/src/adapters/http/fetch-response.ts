import type { Decision } from '../../foundation/decision.js';
import type { VerdictAnswers } from './evaluate.js';
import { JSON_CONTENT_TYPE, limitedBody } from './options.js';

/** A Fetch Response with sluice's JSON body (a 400 or 429); `headers` gets the content type. */
export function jsonResponse(status: number, body: unknown, headers: Headers): Response {
  headers.set('Content-Type', JSON_CONTENT_TYPE);
  return new Response(JSON.stringify(body), { status, headers });
}

/** `response` with the RateLimit headers added; one whose headers are immutable (Response.redirect(), a fetch() answer) is copied. */
export function withHeaders(response: Response, headers: readonly [string, string][]): Response {
  try {
    for (const [name, value] of headers) response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    for (const [name, value] of headers) copy.headers.set(name, value);
    return copy;
  }
}

/**
 * How an adapter that answers with Fetch Responses (Fetch handlers, Hono) answers a 400 and a denial: the
 * default 429 with limitedBody, or `custom` (its limitedResponse) given the decision and the headers.
 */
export function responseAnswers(
  custom: ((decision: Decision, headers: Headers) => Response | Promise<Response>) | undefined,
): Pick<VerdictAnswers<Promise<Response>>, 'reject' | 'limit'> {
  return {
    reject: async (body) => jsonResponse(400, body, new Headers()),
    limit: async (decision, headers) => {
      const all = new Headers(headers as [string, string][]);
      return custom !== undefined ? custom(decision, all) : jsonResponse(429, limitedBody(decision), all);
    },
  };
}
