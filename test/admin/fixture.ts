/**
 * What the admin router's suites share: limiters (3 per minute each) with the router options over them and
 * the audit they record, and servers on free loopback ports stopped after the test.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { type Limiter, createLimiter, fixedWindow } from '@sluice/core';
import type { AdminAction, AdminRouterOptions } from '@sluice/core/admin';

/** The limiters of `prefixes` (a rule `rule` of 3 per minute), the audit, and router options admitting `token`. */
export function adminLimiters(
  closers: Array<() => unknown>,
  prefixes: readonly string[],
  { rule, token }: { rule: string; token: string },
) {
  const limiters = prefixes.map((prefix) =>
    createLimiter({ rules: fixedWindow({ name: rule, limit: 3, windowMs: 60_000 }), prefix }),
  );
  closers.push(() => Promise.all(limiters.map((limiter) => limiter.close())));
  const actions: AdminAction[] = [];
  const options = (more: Partial<AdminRouterOptions> = {}): AdminRouterOptions => ({
    limiters,
    authorize: (request) => request.headers.get('authorization') === token,
    basePath: '/admin',
    onAction: (action) => actions.push(action),
    ...more,
  });
  return { limiters: limiters as readonly Limiter[], actions, options };
}

/** Stops `server` at once (its open connections dropped), as a closer. */
/** A server node:http or node:https made: it can drop its open connections. */
type HttpServer = NetServer & { closeAllConnections(): void };

export function stopping(server: HttpServer): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** `server` listening on a free loopback port, stopped after the test; resolves with the port. */
export async function listenOn(closers: Array<() => unknown>, server: HttpServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(stopping(server));
  return (server.address() as AddressInfo).port;
}

/** `handler` served by node:http on a free loopback port, stopped after the test; resolves with the server. */
export async function serve(
  closers: Array<() => unknown>,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Server> {
  const server = createServer(handler);
  await listenOn(closers, server);
  return server;
}
