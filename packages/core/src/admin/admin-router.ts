import type { Algorithm } from '../algorithms/algorithm.js';
import { ruleFromSpec, ruleSpec } from '../algorithms/rule-spec.js';
import { reportCallbackError } from '../foundation/callbacks.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { parseOptions } from '../foundation/options.js';
import { describe } from '../foundation/validate.js';
import type { Limiter } from '../engine/limiter.js';
import { BodyTooLarge, MAX_ADMIN_BODY_BYTES, jsonBody } from './admin-body.js';
import { checkFailsClosed, refuseBeforeAuthorize, refuseHost } from './admin-guard.js';
import { ADMIN_ROUTER_OPTIONS, type AdminRouterOptions } from './admin-options.js';
import { statusPage } from './status-page.js';

/** What the admin router did, or refused, as its `onAction` hears it: one event per request that changes something. */
export interface AdminAction {
  /** What was asked. */
  readonly action:
    | 'reset'
    | 'block'
    | 'unblock'
    | 'override'
    | 'remove-override'
    | 'allow'
    | 'deny'
    | 'unlist'
    /** A change of the lists refused before its body (which names the list) was read. */
    | 'list';
  /** The limiter (its prefix), when the request named one the router serves. */
  readonly limiter: string | undefined;
  /** The key acted on, or the list entries. */
  readonly target: string | readonly string[] | undefined;
  /**
   * 'done'; 'refused' (authorize said no, or the request came from another site or was not JSON: nothing
   * changed); 'failed' (bad input or the store's error: nothing changed).
   */
  readonly outcome: 'done' | 'refused' | 'failed';
  /** The response's status. */
  readonly status: number;
  /** When, ms since the epoch. */
  readonly at: number;
  /** The request's method and path, for the audit log. */
  readonly request: string;
}

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
        const spec = ruleSpec(rule);
        return { kind: spec.kind, name: spec.name, limit: rule.limit, params: spec.params };
      } catch {
        return { kind: rule.kind, name: rule.name, limit: rule.limit };
      }
    }),
  };
}

/** A whole number from the query, within bounds, or its default. */
function queryInt(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new SluiceRangeError(
      name,
      raw,
      `${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  return n;
}

/** The rules of an override as the request gives them: [{ kind, params, name? }] (see ruleFromSpec). */
function rulesOf(body: Record<string, unknown>): Algorithm[] {
  const rules = body.rules;
  if (!Array.isArray(rules) || rules.length === 0)
    throw new SluiceTypeError(
      'rules',
      rules,
      `rules must be a non-empty array of { kind, params, name? }, got ${describe(rules)}`,
    );
  return rules.map((rule: unknown) => {
    const r = (typeof rule === 'object' && rule !== null ? rule : {}) as Record<string, unknown>;
    return ruleFromSpec({ kind: r.kind, params: r.params, named: r.name !== undefined, name: r.name, blockMs: 0 });
  });
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
      const parts = rest === '' ? [''] : rest.slice(1).split('/');
      const method = request.method.toUpperCase();
      const asked: Asked = { action: actionOf(method, parts), target: undefined };
      const at = Date.now();
      const requestLine = `${method} ${url.pathname}`;
      const refuse = (status: number, body: Record<string, string>, headers?: Record<string, string>) => {
        if (asked.action !== undefined) {
          const { action } = asked;
          audit({ action, limiter: parts[2], target: undefined, outcome: 'refused', status, at, request: requestLine });
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
      const limiterName = parts[2] === undefined ? undefined : (decoded(parts[2]) ?? parts[2]);
      try {
        const answer = await route(method, parts, url, request, asked);
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

  async function route(method: string, parts: string[], url: URL, request: Request, asked: Asked): Promise<Response> {
    const named = (target: string | readonly string[]): void => {
      asked.target = target;
    };
    const [first, second, name, kind, key, verb] = parts;
    if (parts.length === 1 && (first === '' || first === 'index.html')) {
      onlyGet(method);
      return statusPage();
    }
    if (first !== 'api' || second !== 'limiters') throw new NotFound();
    if (name === undefined) {
      onlyGet(method);
      return json(200, { limiters: [...byName.values()].map(limiterView) });
    }
    const limiter = byName.get(safeDecode(name));
    if (limiter === undefined) throw new NotFound();
    if (kind === undefined) {
      onlyGet(method);
      return json(200, limiterView(limiter));
    }
    if (kind === 'top' && key === undefined) {
      onlyGet(method);
      const n = queryInt(url, 'n', 10, 1, 1_000);
      const minutes = queryInt(url, 'minutes', 5, 1, 15);
      return json(200, { limiter: limiter.prefix, minutes, keys: await limiter.topLimited(n, { minutes }) });
    }
    if (kind === 'overrides' && key === undefined) {
      onlyGet(method);
      const cursor = url.searchParams.get('cursor') ?? undefined;
      const page = await limiter.overrides(cursor === undefined ? {} : { cursor });
      return json(200, {
        overrides: page.overrides.map((o) => ({
          key: o.key,
          rules: o.rules.map((r) => ({ kind: r.kind, name: r.name, limit: r.limit })),
        })),
        cursor: page.cursor ?? null,
      });
    }
    if (kind === 'lists' && key === undefined) {
      if (method === 'GET') return json(200, { entries: await limiter.accessList() });
      const body = await jsonBody(request);
      if (method === 'POST') {
        const list = body.list;
        if (list !== 'allow' && list !== 'deny')
          throw new SluiceRangeError('list', list, `list must be 'allow' or 'deny', got ${describe(list)}`);
        asked.action = list;
        named(body.entries as readonly string[]);
        const options = {
          ...(body.ttlMs === undefined ? {} : { ttlMs: body.ttlMs as number }),
          ...(body.reason === undefined ? {} : { reason: body.reason as string }),
        };
        await limiter[list](body.entries as readonly string[], options);
        return json(200, { ok: true });
      }
      if (method === 'DELETE') {
        named(body.entries as readonly string[]);
        return json(200, { removed: await limiter.unlist(body.entries as readonly string[]) });
      }
      throw new NotAllowed();
    }
    if (kind !== 'keys' || key === undefined) throw new NotFound();
    const k = safeDecode(key);
    named(k);
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
    if (verb === 'reset' && method === 'POST') {
      await limiter.reset(k);
      return json(200, { ok: true });
    }
    if (verb === 'block' && method === 'POST') {
      const body = await jsonBody(request);
      await limiter.block(k, body.ms as number);
      return json(200, { ok: true });
    }
    if (verb === 'unblock' && method === 'POST') {
      await limiter.unblock(k);
      return json(200, { ok: true });
    }
    if (verb === 'override' && method === 'PUT') {
      await limiter.override(k, rulesOf(await jsonBody(request)));
      return json(200, { ok: true });
    }
    if (verb === 'override' && method === 'DELETE') {
      await limiter.removeOverride(k);
      return json(200, { ok: true });
    }
    if (['reset', 'block', 'unblock', 'override'].includes(verb)) throw new NotAllowed();
    throw new NotFound();
  }
}

/** JSON has no Infinity: a wait that never ends is null. */
const finite = (ms: number): number | null => (Number.isFinite(ms) ? ms : null);

/** What a request asks for, as the audit reports it: filled in as the request is read. */
interface Asked {
  action: AdminAction['action'] | undefined;
  target: string | readonly string[] | undefined;
}

/** A path segment decoded; undefined for one that is no valid percent-encoding. */
function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** A path segment decoded; one that is no valid percent-encoding is refused (400), never thrown raw. */
function safeDecode(segment: string): string {
  const text = decoded(segment);
  if (text === undefined)
    throw new SluiceTypeError('path', segment, `${JSON.stringify(segment)} is not a valid URL path segment`);
  return text;
}

class NotFound extends Error {}
class NotAllowed extends Error {}

function onlyGet(method: string): void {
  if (method !== 'GET' && method !== 'HEAD') throw new NotAllowed();
}

/** The change a request asks for (undefined: a read). */
function actionOf(method: string, parts: readonly string[]): AdminAction['action'] | undefined {
  const [, , , kind, key, verb] = parts;
  if (kind === 'lists' && key === undefined) {
    // Allow or deny: the body says, once it is read (see route).
    if (method === 'POST') return 'list';
    if (method === 'DELETE') return 'unlist';
    return undefined;
  }
  if (kind !== 'keys' || verb === undefined) return undefined;
  if (verb === 'reset' && method === 'POST') return 'reset';
  if (verb === 'block' && method === 'POST') return 'block';
  if (verb === 'unblock' && method === 'POST') return 'unblock';
  if (verb === 'override') return method === 'DELETE' ? 'remove-override' : method === 'PUT' ? 'override' : undefined;
  return undefined;
}
