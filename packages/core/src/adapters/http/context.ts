import { SluiceError } from '../../foundation/errors.js';
import { type RequestView, nodeRequestView } from './view.js';

/** The request being handled, as the adapter that admitted it saw it. */
export interface RequestContext {
  /** The framework's own request: Express's `req`, Fastify's `request`, Koa's and Hono's context, a Fetch `Request`. */
  readonly request: unknown;
  readonly view: RequestView;
}

/** The part of AsyncLocalStorage sluice uses. */
interface ContextStorage {
  run<R>(store: RequestContext, fn: () => R): R;
  getStore(): RequestContext | undefined;
}

type StorageClass = new () => ContextStorage;

/**
 * AsyncLocalStorage where the runtime has it (Node, Bun, Deno, Workers with nodejs_als), found without a
 * `node:` import so this module loads on any runtime: `process.getBuiltinModule` (Node >= 20.16, Bun, Deno),
 * else a global AsyncLocalStorage (Cloudflare Workers). Undefined where there is none: adapters then run
 * requests as they are, and only decorators keyed by request say they cannot see it.
 */
function findStorage(): ContextStorage | undefined {
  const g = globalThis as {
    process?: { getBuiltinModule?: (id: string) => unknown };
    AsyncLocalStorage?: StorageClass;
  };
  const hooks = g.process?.getBuiltinModule?.('node:async_hooks') as { AsyncLocalStorage?: StorageClass } | undefined;
  const Storage = hooks?.AsyncLocalStorage ?? g.AsyncLocalStorage;
  return Storage === undefined ? undefined : new Storage();
}

const storage = findStorage();

/**
 * Runs `fn` (the rest of a request) inside a request context; as it is where the runtime has no AsyncLocalStorage.
 * @example
 * runInRequestContext({ view: nodeRequestView(req), request: req }, () => next())
 */
export function runInRequestContext<R>(context: RequestContext, fn: () => R): R {
  return storage === undefined ? fn() : storage.run(context, fn);
}

/**
 * The request being handled here, or undefined outside one (or where the runtime has no AsyncLocalStorage).
 * @example
 * const ctx = currentRequestContext()
 * if (ctx !== undefined) log.info('limited', ctx.view.path)
 */
export function currentRequestContext(): RequestContext | undefined {
  return storage?.getStore();
}

/** The current request, for a decorator keyed by request; a typed error saying why when there is none. */
export function requireRequestContext(what: string): RequestContext {
  const context = currentRequestContext();
  if (context !== undefined) return context;
  const why =
    storage === undefined
      ? 'this runtime has no AsyncLocalStorage, so the request cannot be followed into the method'
      : 'it was called outside any request a sluice HTTP adapter (or requestContext()) handled';
  throw new SluiceError(
    'NO_REQUEST',
    `${what} keys calls by the current request, but ${why}. Mount rateLimit(...) or requestContext() from ` +
      `@sluice/core/http in front of the routes that call it, or key it by the call instead`,
  );
}

/** The part of a node:http / Connect / Express request `requestContext()` reads (see nodeRequestView). */
type NodeRequest = Parameters<typeof nodeRequestView>[0];

/**
 * Middleware that only opens a request context, for apps that limit in method decorators alone (`key:
 * byIp()`, `key: byUser(...)`) with no HTTP limit in front: `app.use(requestContext())` for node:http,
 * Connect and Express. Every sluice HTTP adapter already does this for the requests it lets through.
 *
 * @example
 * app.use(requestContext())
 */
export function requestContext<Req extends NodeRequest = NodeRequest>(): (
  req: Req,
  res: unknown,
  next: (error?: unknown) => void,
) => void {
  return (req, _res, next) => runInRequestContext({ request: req, view: nodeRequestView(req) }, next);
}
