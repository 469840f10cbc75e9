import type { HttpRequestLike } from './request.js';

/**
 * What sluice reads from a request, whatever the framework: each adapter gives one per request, so the
 * built-in key strategies (byIp, byRoute) read Express, Fastify, Koa, Hono and Fetch requests the same way.
 */
export interface RequestView {
  /** A request header by its lower-case name; repeated headers joined with ', '. */
  header(name: string): string | undefined;
  /**
   * The address the connection came from, as the framework or runtime knows it (Express's and Fastify's
   * `req.ip`, Koa's `ctx.ip`, the socket's peer, a runtime's connection info); undefined when it has none.
   */
  readonly peerAddress: string | undefined;
  readonly method: string;
  /** The path as the client sent it, without the query string. */
  readonly path: string;
  /**
   * Aborted when the client goes away before its response was sent: a decision that waits (`maxWaitMs`, a
   * concurrency wait) stops waiting then, so a caller that left never spends permits later. Undefined where
   * the framework gives no way to know.
   */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The path of a URL or request target, without its query string.
 * @example
 * pathOf('/search?q=x') // '/search'
 */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The part of node's ServerResponse that tells a client went away (its connection closed before the end). */
interface ClosingResponse {
  readonly writableFinished?: boolean;
  readonly closed?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

function isClosing(value: unknown): value is ClosingResponse {
  return typeof (value as ClosingResponse | undefined)?.once === 'function';
}

/**
 * A signal aborted when `res` closes before it finished: the client went away. Undefined for a response that
 * cannot tell.
 * @example
 * const signal = clientGone(res) // aborted if the client disconnects first
 */
export function clientGone(res: unknown): AbortSignal | undefined {
  if (!isClosing(res)) return undefined;
  const controller = new AbortController();
  const gone = (): void => {
    if (res.writableFinished !== true) controller.abort(new Error('the client went away before its response'));
  };
  if (res.closed === true) gone();
  else res.once('close', gone);
  return controller.signal;
}

/**
 * clientGone(res), made the first time it is asked for: a view's `signal` is read only by a decision that
 * waits, so a request that never waits pays for no controller and no listener.
 * @example
 * const signal = lazyClientGone(res) // later: signal() when a decision is about to wait
 */
export function lazyClientGone(res: unknown): () => AbortSignal | undefined {
  let made = false;
  let signal: AbortSignal | undefined;
  return () => {
    if (!made) {
      made = true;
      signal = clientGone(res);
    }
    return signal;
  };
}

/**
 * node:http's request and the Express, Connect and Fastify requests built on it; with the node response
 * (`res`, Fastify's `reply.raw`), `signal` tells when the client goes away.
 * @example
 * const view = nodeRequestView(req, res) // { method: 'GET', path: '/search', ... }
 */
export function nodeRequestView(req: HttpRequestLike, res?: unknown): RequestView {
  const signal = lazyClientGone(res);
  return {
    get signal() {
      return signal();
    },
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    peerAddress: (typeof req.ip === 'string' ? req.ip : undefined) ?? req.socket?.remoteAddress,
    method: req.method ?? 'GET',
    path: pathOf(req.originalUrl ?? req.url ?? ''),
  };
}
