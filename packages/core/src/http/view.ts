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

/**
 * node:http's request and the Express, Connect and Fastify requests built on it.
 * @example
 * const view = nodeRequestView(req) // { method: 'GET', path: '/search', ... }
 */
export function nodeRequestView(req: HttpRequestLike): RequestView {
  return {
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    peerAddress: (typeof req.ip === 'string' ? req.ip : undefined) ?? req.socket?.remoteAddress,
    method: req.method ?? 'GET',
    path: pathOf(req.originalUrl ?? req.url ?? ''),
  };
}
