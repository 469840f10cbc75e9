/**
 * The same rate-limit options mounted on plain node:http, Express, Fastify, Hono 4 (on @hono/node-server),
 * Koa 3 and a Fetch handler (Node's own Request and Response, served by @hono/node-server), each listening on
 * a free loopback port: the HTTP suites run every scenario against all six.
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type MiddlewareOptions, rateLimit, rateLimitHook } from '@sluice/core/http';
import { fetchRateLimit } from '@sluice/core/fetch';
import { honoRateLimit } from '@sluice/core/hono';
import { koaRateLimit } from '@sluice/core/koa';
import { type HttpBindings, serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';

export interface TestServer {
  readonly url: string;
  close(): Promise<void>;
}

// The middleware options cover the Fastify hook's too; request types differ per framework, the fields read do not.
type Options = MiddlewareOptions<never, never>;
/**
 * Every framework adapter, the one list every HTTP suite iterates: how its responses end, which decides how
 * a slot or an after-response settlement learns of the end (a Node response's events, or a Fetch Response's
 * body). A new adapter is added here and startServer serves it; every suite then runs on it.
 */
export const ADAPTERS = {
  'node:http': { response: 'node' },
  express: { response: 'node' },
  fastify: { response: 'node' },
  hono: { response: 'fetch' },
  koa: { response: 'node' },
  fetch: { response: 'fetch' },
} as const satisfies Record<string, { readonly response: 'node' | 'fetch' }>;
export type Framework = keyof typeof ADAPTERS;
export const frameworks = Object.keys(ADAPTERS) as Framework[];
/** The adapters whose responses are Node's (the connection's close is seen), and those that answer a Fetch Response. */
export const nodeFrameworks = frameworks.filter((f) => ADAPTERS[f].response === 'node');
export const fetchFrameworks = frameworks.filter((f) => ADAPTERS[f].response === 'fetch');

async function listen(server: ReturnType<typeof createServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: ReturnType<typeof createServer>): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * What a route answers: `{ ok: true }`, or the JSON of `respond()` (a route that calls a decorated service,
 * say), or an Answer: a status, response headers and a body.
 */
export type Respond = (header: (name: string) => string | undefined) => Promise<unknown>;
const okBody: Respond = async () => ({ ok: true });

/** An answer with its own status and headers (a route that fails, or reports what it cost). */
export class Answer {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}

/** A route that answers as the request asks: status from `x-status`, and `x-tokens` echoed as a response header. */
export const echoRoute: Respond = async (header) => {
  const tokens = header('x-tokens');
  return new Answer(
    Number(header('x-status') ?? 200),
    { ok: true },
    tokens === undefined ? {} : { 'x-tokens': tokens },
  );
};

const statusOf = (value: unknown): number => (value instanceof Answer ? value.status : 200);
/** Statuses a Fetch Response must carry no body with (Response.json(body, { status: 204 }) throws). */
const bodiless = (status: number): boolean => [204, 205, 304].includes(status);
const bodyOf = (value: unknown): unknown => (value instanceof Answer ? value.body : value);
const headersOf = (value: unknown): Readonly<Record<string, string>> => (value instanceof Answer ? value.headers : {});
const nodeHeader = (req: IncomingMessage) => (name: string) => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export async function startServer(
  framework: Framework,
  options: Options,
  respond: Respond = okBody,
): Promise<TestServer> {
  const opts = options as unknown as MiddlewareOptions<IncomingMessage, ServerResponse>;
  if (framework === 'node:http') {
    const middleware = rateLimit(opts);
    const server = createServer((req, res) => {
      middleware(req, res, (error) => {
        const body = error === undefined ? respond(nodeHeader(req)) : Promise.reject(error);
        body.then(
          (value) => {
            res.statusCode = statusOf(value);
            for (const [name, v] of Object.entries(headersOf(value))) res.setHeader(name, v);
            res.setHeader('Content-Type', 'application/json');
            res.end(JSON.stringify(bodyOf(value)));
          },
          (fault: unknown) => {
            res.statusCode = 500;
            res.setHeader('Content-Type', 'application/json');
            res.end(JSON.stringify({ fault: String(fault) }));
          },
        );
      });
    });
    const url = await listen(server);
    return { url, close: () => closeServer(server) };
  }
  if (framework === 'express') {
    const app = express();
    app.use(rateLimit(options as unknown as MiddlewareOptions<express.Request, express.Response>));
    app.get('/', async (req, res) => {
      const value = await respond((name) => req.get(name));
      res.status(statusOf(value)).set(headersOf(value)).json(bodyOf(value));
    });
    // Express 5 answers next(error) with its own 500; keep its stack traces out of the test output.
    app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).json({ fault: true });
    });
    const server = createServer(app);
    const url = await listen(server);
    return { url, close: () => closeServer(server) };
  }
  if (framework === 'hono') {
    const app = new Hono<{ Bindings: HttpBindings }>();
    app.use('*', honoRateLimit(options as never));
    app.get('/', async (c) => {
      const value = await respond((name) => c.req.header(name));
      if (bodiless(statusOf(value))) return c.body(null, statusOf(value) as 204, headersOf(value));
      return c.json(bodyOf(value) as object, statusOf(value) as 200, headersOf(value));
    });
    app.onError((_error, c) => c.json({ fault: true }, 500));
    return serveFetch(app.fetch);
  }
  if (framework === 'koa') {
    const app = new Koa();
    // Koa logs every error it answers 500; the tests read the status.
    app.silent = true;
    app.use(koaRateLimit(options as never));
    app.use(async (ctx) => {
      const value = await respond((name) => ctx.get(name) || undefined);
      ctx.status = statusOf(value);
      ctx.set(headersOf(value) as Record<string, string>);
      ctx.body = bodyOf(value);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => closeServer(server) };
  }
  if (framework === 'fetch') {
    const handler = fetchRateLimit<Request, [HttpBindings]>({
      address: (_request: Request, env: HttpBindings) => env.incoming.socket.remoteAddress,
      ...(options as object),
    } as never)(async (request: Request) => {
      const value = await respond((name) => request.headers.get(name) ?? undefined);
      if (bodiless(statusOf(value))) return new Response(null, { status: statusOf(value), headers: headersOf(value) });
      return Response.json(bodyOf(value), { status: statusOf(value), headers: headersOf(value) });
    });
    return serveFetch(handler as (request: Request, env: HttpBindings) => Promise<Response>);
  }
  // Closing the server drops open connections at once (a test that aborts a request leaves one).
  const app = Fastify({ forceCloseConnections: true });
  app.addHook('onRequest', rateLimitHook(options as never));
  app.get('/', async (request, reply) => {
    const value = await respond((name) => nodeHeader(request.raw)(name));
    reply.code(statusOf(value)).headers(headersOf(value));
    return bodyOf(value);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

/** A Fetch handler served on node:http by @hono/node-server (Node's own Request and Response). */
async function serveFetch(
  fetch: (request: Request, env: HttpBindings) => Response | Promise<Response>,
): Promise<TestServer> {
  const server = await new Promise<ReturnType<typeof createServer>>((resolve) => {
    const s = serve({ fetch: fetch as never, port: 0, hostname: '127.0.0.1' }, () =>
      resolve(s as ReturnType<typeof createServer>),
    );
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => closeServer(server) };
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

export async function get(url: string, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body };
}
