import { SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';
import { MAX_ADMIN_BODY_BYTES } from './admin-body.js';
import type { AdminRouter } from './admin-router.js';

/** Node's request as the handler reads it (node:http's IncomingMessage, Express's, Koa's ctx.req, Fastify's raw). */
export interface NodeAdminRequest extends AsyncIterable<Uint8Array | string> {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: Record<string, string | string[] | undefined>;
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
 * (`reply.hijack()`, then `request.raw`, `reply.raw`) and NestJS on either. A body past
 * MAX_ADMIN_BODY_BYTES is refused (413): what comes past the bound is read and dropped, never held.
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
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    let body: ArrayBuffer | undefined;
    if (!BODILESS.has(method)) {
      const chunks: Uint8Array[] = [];
      let length = 0;
      for await (const chunk of req) {
        const bytes = typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
        length += bytes.byteLength;
        // Past the bound the rest is read and dropped, never kept: leaving the loop would destroy the socket
        // under a client still sending, which then sees a reset instead of the 413.
        if (length <= MAX_ADMIN_BODY_BYTES) chunks.push(bytes);
        else chunks.length = 0;
      }
      if (length > MAX_ADMIN_BODY_BYTES) {
        res.statusCode = 413;
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.end(
          new TextEncoder().encode(JSON.stringify({ error: 'Payload Too Large', maxBytes: MAX_ADMIN_BODY_BYTES })),
        );
        return;
      }
      const bytes = new Uint8Array(length);
      let at = 0;
      for (const chunk of chunks) {
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      body = bytes.buffer;
    }
    const host = headers.get('host') ?? 'localhost';
    const request = new Request(`http://${host}${req.url ?? '/'}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const response = await router.fetch(request);
    res.statusCode = response.status;
    response.headers.forEach((value, name) => {
      res.setHeader(name, value);
    });
    res.end(new Uint8Array(await response.arrayBuffer()));
  };
}
