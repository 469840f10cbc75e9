import { JSON_CONTENT_TYPE } from './options.js';

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
