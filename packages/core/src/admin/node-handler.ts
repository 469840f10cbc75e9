import { SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';
import { ADMIN_ORIGIN, ADMIN_TLS_ORIGIN } from './admin-guard.js';
import type { AdminRouter } from './admin-router.js';

/** Node's request as the handler reads it (node:http's IncomingMessage, Express's, Koa's ctx.req, Fastify's raw). */
export interface NodeAdminRequest extends AsyncIterable<Uint8Array | string> {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: Record<string, string | string[] | undefined>;
  /** True once the body was read (by a body parser in front of the handler, say). */
  readonly readableEnded?: boolean | undefined;
  /** The body a parser in front already read (Express's `express.json()`), used when the stream was read. */
  readonly body?: unknown;
  /** The connection (a net.Socket): `encrypted` true on a TLS one (node:https) makes the request's scheme https. */
  readonly socket?: unknown;
}

/** Node's response as the handler writes it. */
export interface NodeAdminResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: Uint8Array): unknown;
}

const BODILESS = new Set(['GET', 'HEAD']);

/**
 * The admin router as a Node handler `(req, res)`: for node:http, Express (`app.use('/admin', handler)`, the
 * router's basePath left '' as Express strips the mount path), Koa (`ctx.respond = false`), Fastify
 * (`reply.hijack()`, then `request.raw`, `reply.raw`) and NestJS on either. The router's URL is built on a
 * fixed origin from the request's path (never its Host header); the body is handed to the router as a stream
 * it reads only after `authorize` said yes, and at most MAX_ADMIN_BODY_BYTES of it (the rest is read and
 * dropped, never held). A body a parser in front already read (Express's `express.json()`) is used as parsed.
 * @example
 * app.use('/admin', nodeAdminHandler(adminRouter({ limiters: [api], authorize })))
 */
export function nodeAdminHandler(
  router: AdminRouter,
): (req: NodeAdminRequest, res: NodeAdminResponse) => Promise<void> {
  if (typeof router?.fetch !== 'function')
    throw new SluiceTypeError('router', router, `nodeAdminHandler needs an adminRouter, got ${describe(router)}`);
  return async (req, res) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const target = pathOf(req.url ?? '/');
    if (target === undefined) {
      send(res, 400, { error: 'Bad Request', message: 'the request target must be a plain path' });
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const body = BODILESS.has(method) ? undefined : new LazyBody(req);
    // The Origin check compares schemes: the router knows the connection's only from the URL made here.
    const tls = (req.socket as { encrypted?: unknown } | undefined)?.encrypted === true;
    const request = new Request(`${tls ? ADMIN_TLS_ORIGIN : ADMIN_ORIGIN}${target}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: body.stream, duplex: 'half' }),
    } as RequestInit);
    const response = await router.fetch(request);
    res.statusCode = response.status;
    response.headers.forEach((value, name) => {
      res.setHeader(name, value);
    });
    res.end(new Uint8Array(await response.arrayBuffer()));
    // A body the router left half read (a refusal, one past the bound) is read on and dropped: stopping would
    // destroy the socket under a client still sending, which then sees a reset instead of the answer.
    body?.drain();
  };
}

/**
 * The request target (its path and query), or undefined for one the handler refuses, so that a gate in front
 * reading `req.url` as sent and the router always see one request: a target that is not a path (a proxy's
 * absolute form `http://host/path`, `*`), or a path URL parsing would rewrite (a backslash, a '.' or '..'
 * segment, plain or percent-encoded).
 */
function pathOf(target: string): string | undefined {
  if (!target.startsWith('/')) return undefined;
  const pathname = target.split('?', 1)[0] as string;
  if (pathname.includes('\\') || pathname.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment)))
    return undefined;
  return target;
}

/**
 * The request's body as a stream the router pulls: nothing is read from the socket until the router asks
 * (after authorize), and only as much as it asks for.
 */
class LazyBody {
  readonly stream: ReadableStream<Uint8Array>;
  #iterator: AsyncIterator<Uint8Array | string> | undefined;
  #ended = false;

  constructor(req: NodeAdminRequest) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          if (this.#iterator === undefined) {
            // Read before the handler ran: a parser in front has it, or nobody does.
            if (req.readableEnded === true) {
              this.#ended = true;
              const parsed = hasBody(req) ? parsedBody(req.body) : new Uint8Array(0);
              if (parsed.byteLength > 0) controller.enqueue(parsed);
              controller.close();
              return;
            }
            this.#iterator = req[Symbol.asyncIterator]();
          }
          const { done, value } = await this.#iterator.next();
          if (done) {
            this.#ended = true;
            controller.close();
          } else controller.enqueue(typeof value === 'string' ? new TextEncoder().encode(value) : value);
        },
      },
      // Nothing is pulled before the first read.
      { highWaterMark: 0 },
    );
  }

  /** Reads what the router left, dropping it. Never started: node:http drops an unread body by itself. */
  drain(): void {
    const iterator = this.#iterator;
    if (iterator === undefined || this.#ended) return;
    this.#ended = true;
    void (async () => {
      try {
        while (!(await iterator.next()).done);
      } catch {
        // The client went away: nothing left to drop.
      }
    })();
  }
}

/** Whether the request came with a body (a reset without one, read by a parser in front, lost nothing). */
function hasBody(req: NodeAdminRequest): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The bytes of a body a parser in front read: as sent (a Buffer, a string) or as JSON (an object). */
function parsedBody(body: unknown): Uint8Array {
  if (body instanceof Uint8Array) return body;
  if (typeof body === 'string') return new TextEncoder().encode(body);
  if (body === undefined)
    throw new SluiceTypeError(
      'body',
      body,
      'the request body was read before the admin router (a body parser in front of it) and not handed on: ' +
        'mount the router before the parser, or leave the parser out of its routes',
    );
  return new TextEncoder().encode(JSON.stringify(body));
}

function send(res: NodeAdminResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(new TextEncoder().encode(JSON.stringify(body)));
}
