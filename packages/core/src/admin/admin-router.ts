import type { Algorithm } from '../algorithms/algorithm.js';
import { ruleSpec } from '../algorithms/rule-spec.js';
import { reportCallbackError } from '../foundation/callbacks.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { parseOptions } from '../foundation/options.js';
import type { Limiter } from '../engine/limiter-types.js';
import { BodyTooLarge, MAX_ADMIN_BODY_BYTES, jsonBody } from './admin-body.js';
import { checkFailsClosed, refuseBeforeAuthorize, refuseHost } from './admin-guard.js';
import { ADMIN_ROUTER_OPTIONS, type AdminRouterOptions } from './admin-options.js';
import {
  type AdminAction,
  BODIES,
  QUERIES,
  type Route,
  actionOf,
  parseBody,
  parseQuery,
  routeOf,
} from './admin-routes.js';
import { statusPage } from './status-page.js';

/** The admin router: a Fetch handler. */
export interface AdminRouter {
  /** Answers one request: the page, its script, or an API call (JSON); never rejects. */
  fetch(request: Request): Promise<Response>;
}

/** Typed input errors are the client's (400); a store's failure is 503; anything else 500. */
function errorStatus(error: unknown): number {
  if (error instanceof BodyTooLarge) return 413;
  if (error instanceof SluiceTypeError || error instanceof SluiceRangeError) return 400;
  if (error instanceof SluiceError) {
    if (error.code === 'STORE_UNAVAILABLE') return 503;
    if (error.code === 'UNSUPPORTED' || error.code === 'NEVER_ALLOWED') return 400;
    if (error.code === 'CONFLICT') return 409;
  }
  return 500;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...headers,
    },
  });

/** One limiter as the router lists it: its name (prefix), its rules as data, its configuration version. */
function limiterView(limiter: Limiter) {
  return {
    name: limiter.prefix,
    configVersion: limiter.configVersion,
    rules: limiter.rules.map((rule: Algorithm) => {
      try {
        // Params by their options' names (what an override's rules are written with), not a stored spec's.
        const spec = ruleSpec(rule);
        return { kind: spec.kind, name: spec.name, limit: rule.limit, params: { ...rule.params } };
      } catch {
        return { kind: rule.kind, name: rule.name, limit: rule.limit };
      }
    }),
  };
}

/**
 * A Fetch handler to see and act on limiters: JSON endpoints under `api/` (list the limiters and their rules,
 * inspect a key, reset, block and unblock it, set and remove its override, read and edit the allow and deny
 * lists, read the most limited keys) and, at its root, a status page (plain HTML and a little script, no
 * external assets). Every request must pass `authorize`; every change is reported to `onAction`. Mount it
 * where the framework takes a Fetch handler, or through `nodeAdminHandler` where it takes Node's.
 * Writes (POST, PUT, DELETE) are taken only as `Content-Type: application/json` and only from the router's
 * own origin (`Sec-Fetch-Site`, `Origin`): a page on another site cannot change anything with the admin's
 * cookie or Basic login. See docs/threat-model.md.
 * @example
 * const token = process.env.ADMIN_TOKEN
 * if (token === undefined || token.length < 32) throw new Error('set ADMIN_TOKEN (32 characters or more)')
 * const admin = adminRouter({ limiters: [api], authorize: (req) => req.headers.get('authorization') === `Bearer ${token}`, basePath: '/admin' })
 * app.all('/admin/*', (c) => admin.fetch(c.req.raw)) // Hono
 */
export function adminRouter(options: AdminRouterOptions): AdminRouter {
  const { limiters, authorize, basePath, challenge, onAction } = parseOptions(
    'adminRouter options',
    ADMIN_ROUTER_OPTIONS,
    options,
    true,
  );
  const byName = new Map<string, Limiter>();
  for (const limiter of limiters) {
    if (byName.has(limiter.prefix))
      throw new SluiceRangeError(
        'limiters',
        limiter.prefix,
        `two limiters have the prefix ${JSON.stringify(limiter.prefix)}`,
      );
    byName.set(limiter.prefix, limiter);
  }
  // Refused here when it is synchronous; else checked once, before the first request is answered.
  const failsClosed = checkFailsClosed(authorize, basePath);

  const audit = (event: AdminAction): void => {
    if (onAction === undefined) return;
    try {
      onAction(event);
    } catch (error) {
      reportCallbackError(undefined, 'adminRouter onAction', error);
    }
  };

  return {
    async fetch(request: Request): Promise<Response> {
      const unsafe = failsClosed === undefined ? undefined : await failsClosed;
      if (unsafe !== undefined) return json(500, { error: 'Error', message: unsafe.message });
      const badHost = refuseHost(request);
      if (badHost !== undefined) return json(badHost.status, { error: badHost.error, message: badHost.message });
      const url = new URL(request.url);
      // Whole segments: '/admin' is not a prefix of '/adminXapi/...'.
      if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`))
        return json(404, { error: 'Not Found' });
      const rest = url.pathname.slice(basePath.length);
      // The page is served with or without its trailing slash (its script finds the API from either).
      const path = routeOf(rest === '' ? [''] : rest.slice(1).split('/'));
      const method = request.method.toUpperCase();
      const asked: Asked = { action: actionOf(method, path), target: undefined };
      const at = Date.now();
      const requestLine = `${method} ${url.pathname}`;
      // One form in every event: the name the path gives, when the router serves it.
      const limiterName =
        path !== undefined && 'limiter' in path && byName.has(path.limiter) ? path.limiter : undefined;
      const refuse = (status: number, body: Record<string, string>, headers?: Record<string, string>) => {
        if (asked.action !== undefined) {
          const { action } = asked;
          audit({
            action,
            limiter: limiterName,
            target: undefined,
            outcome: 'refused',
            status,
            at,
            request: requestLine,
          });
        }
        return json(status, body, headers);
      };
      // From headers only, before authorize and before any body is read.
      const refusal = refuseBeforeAuthorize(request, method);
      if (refusal !== undefined) return refuse(refusal.status, { error: refusal.error, message: refusal.message });
      let allowed = false;
      try {
        allowed = (await authorize(request)) === true;
      } catch (error) {
        reportCallbackError(undefined, 'adminRouter authorize', error);
      }
      if (!allowed) {
        const anonymous = !request.headers.has('authorization') && !request.headers.has('cookie');
        // Says what is missing, never what would pass.
        return anonymous
          ? refuse(
              401,
              {
                error: 'Unauthorized',
                message: 'the sluice admin router needs credentials; this request carried none',
              },
              { 'www-authenticate': challenge },
            )
          : refuse(403, { error: 'Forbidden', message: 'the sluice admin router refused these credentials' });
      }
      try {
        const answer = await route(method, path, url, request, asked);
        const { action, target } = asked;
        if (action !== undefined)
          audit({
            action,
            limiter: limiterName,
            target,
            outcome: 'done',
            status: answer.status,
            at,
            request: requestLine,
          });
        return answer;
      } catch (error) {
        const status = error instanceof NotFound ? 404 : error instanceof NotAllowed ? 405 : errorStatus(error);
        const { action, target } = asked;
        if (action !== undefined)
          audit({ action, limiter: limiterName, target, outcome: 'failed', status, at, request: requestLine });
        if (error instanceof BodyTooLarge)
          return json(413, { error: 'Payload Too Large', message: error.message, maxBytes: MAX_ADMIN_BODY_BYTES });
        const e = error as { message?: string; argument?: string; code?: string };
        return json(status, {
          error:
            status === 404
              ? 'Not Found'
              : status === 405
                ? 'Method Not Allowed'
                : status < 500
                  ? 'Bad Request'
                  : 'Error',
          message: status >= 500 && !(error instanceof SluiceError) ? 'the limiter failed' : e.message,
          ...(e.argument === undefined ? {} : { argument: e.argument }),
          ...(e.code === undefined ? {} : { code: e.code }),
        });
      }
    },
  };

  async function route(
    method: string,
    path: Route | undefined,
    url: URL,
    request: Request,
    asked: Asked,
  ): Promise<Response> {
    const named = (target: string | readonly string[]): void => {
      asked.target = target;
    };
    if (path === undefined) throw new NotFound();
    if (path.at === 'page') {
      onlyGet(method);
      return statusPage();
    }
    // Every API route reads its query by a schema: only top and overrides take any.
    const what = `${method} ${path.at}`;
    if (path.at !== 'top' && path.at !== 'overrides') parseQuery(what, QUERIES.none, url);
    if (path.at === 'limiters') {
      onlyGet(method);
      return json(200, { limiters: [...byName.values()].map(limiterView) });
    }
    const limiter = byName.get(path.limiter);
    if (limiter === undefined) throw new NotFound();
    if (path.at === 'limiter') {
      onlyGet(method);
      return json(200, limiterView(limiter));
    }
    if (path.at === 'top') {
      onlyGet(method);
      const { n, minutes } = parseQuery(what, QUERIES.top, url);
      return json(200, { limiter: limiter.prefix, minutes, keys: await limiter.topLimited(n, { minutes }) });
    }
    if (path.at === 'overrides') {
      onlyGet(method);
      const cursor = parseQuery(what, QUERIES.overrides, url).cursor as string | undefined;
      const page = await limiter.overrides(cursor === undefined ? {} : { cursor });
      return json(200, {
        overrides: page.overrides.map((o) => ({
          key: o.key,
          rules: o.rules.map((r) => ({ kind: r.kind, name: r.name, limit: r.limit })),
        })),
        cursor: page.cursor ?? null,
      });
    }
    if (path.at === 'lists') {
      if (method === 'GET') return json(200, { entries: await limiter.accessList() });
      if (method === 'POST') {
        const body = parseBody('POST lists', BODIES.list, await jsonBody(request));
        asked.action = body.list;
        const entries = body.entries as readonly string[];
        named(entries);
        const options = {
          ...(body.ttlMs === undefined ? {} : { ttlMs: body.ttlMs as number }),
          ...(body.reason === undefined ? {} : { reason: body.reason as string }),
        };
        await limiter[body.list](entries, options);
        return json(200, { ok: true });
      }
      if (method === 'DELETE') {
        const entries = parseBody('DELETE lists', BODIES.unlist, await jsonBody(request)).entries as readonly string[];
        named(entries);
        return json(200, { removed: await limiter.unlist(entries) });
      }
      throw new NotAllowed();
    }
    const k = safeDecode(path.key);
    named(k);
    const { verb } = path;
    if (verb === undefined) {
      onlyGet(method);
      const decision = await limiter.peek(k);
      return json(200, {
        limiter: limiter.prefix,
        key: k,
        decision: {
          ...decision,
          retryAfterMs: finite(decision.retryAfterMs),
          resetAfterMs: finite(decision.resetAfterMs),
        },
      });
    }
    // Every write's body is read and parsed, those that take none too: `{ "key": "other" }` is refused.
    const body = async <S extends (typeof BODIES)[keyof typeof BODIES]>(schema: S) =>
      parseBody(`${method} ${verb}`, schema, await jsonBody(request));
    if (verb === 'reset' && method === 'POST') {
      await body(BODIES.none);
      await limiter.reset(k);
      return json(200, { ok: true });
    }
    if (verb === 'block' && method === 'POST') {
      await limiter.block(k, (await body(BODIES.block)).ms as number);
      return json(200, { ok: true });
    }
    if (verb === 'unblock' && method === 'POST') {
      await body(BODIES.none);
      await limiter.unblock(k);
      return json(200, { ok: true });
    }
    if (verb === 'override' && method === 'PUT') {
      await limiter.override(k, (await body(BODIES.override)).rules);
      return json(200, { ok: true });
    }
    if (verb === 'override' && method === 'DELETE') {
      await body(BODIES.none);
      await limiter.removeOverride(k);
      return json(200, { ok: true });
    }
    throw new NotAllowed();
  }
}

/** JSON has no Infinity: a wait that never ends is null. */
const finite = (ms: number): number | null => (Number.isFinite(ms) ? ms : null);

/** What a request asks for, as the audit reports it: filled in as the request is read. */
interface Asked {
  action: AdminAction['action'] | undefined;
  target: string | readonly string[] | undefined;
}

/** A key's path segment decoded (once); one that is no valid percent-encoding is refused (400), never thrown raw. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SluiceTypeError('path', segment, `${JSON.stringify(segment)} is not a valid URL path segment`);
  }
}

class NotFound extends Error {}
class NotAllowed extends Error {}

function onlyGet(method: string): void {
  if (method !== 'GET' && method !== 'HEAD') throw new NotAllowed();
}
