/**
 * The parts of a request and response sluice touches. node:http's IncomingMessage / ServerResponse and the
 * Express, Connect and Fastify objects built on them all fit, so @sluice/core needs none of their types.
 */
export interface HttpRequestLike {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  /** Express: the URL before a mounted router cut its prefix off. */
  readonly originalUrl?: string | undefined;
  /** Set by Express and Fastify from the socket and their own trust-proxy setting. */
  readonly ip?: string | undefined;
  readonly socket?: { readonly remoteAddress?: string | undefined } | undefined;
}

/** node:http's ServerResponse (and Express's, Connect's). */
export interface HttpResponseLike {
  statusCode: number;
  readonly headersSent?: boolean;
  /** Sets a response header. */
  setHeader(name: string, value: string | number | readonly string[]): unknown;
  /** Ends the response, with a body. */
  end(body?: string): unknown;
}

/** Fastify's reply. */
export interface FastifyReplyLike {
  readonly sent?: boolean;
  /** The node response under the reply (after-response accounting listens to it). */
  readonly raw?: unknown;
  /** Sets the status code. */
  code(statusCode: number): unknown;
  /** Sets a reply header. */
  header(name: string, value: string | number): unknown;
  /** Sends the payload and ends the reply. */
  send(payload?: unknown): unknown;
}
