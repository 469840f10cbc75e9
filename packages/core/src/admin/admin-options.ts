import type { Limiter } from '../engine/limiter-types.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { type SchemaOf, option, optional, required } from '../foundation/options.js';
import { describe } from '../foundation/validate.js';
import type { AdminAction } from './admin-routes.js';

/** Options of `adminRouter`. */
export interface AdminRouterOptions {
  /** The limiters it serves, each by its prefix (two with one prefix are refused). */
  limiters: readonly Limiter[];
  /**
   * Says whether a request may use the router, from its headers (the body is read only after it said yes):
   * required, there is no default that lets everyone in. false answers 401 to a request with no credentials
   * (no Authorization header, no cookie) and 403 to others. It must fail closed: at construction it is asked
   * about requests with no credentials, with an empty Cookie header, and with an unset secret's
   * `Bearer undefined` (or `null`, or empty, or Basic `undefined:undefined`, or cookies such as
   * `session=undefined`); one that lets any of these in is refused (SluiceRangeError 'authorize'; an
   * asynchronous authorize is checked before the first request, and the router serves nothing if it fails).
   */
  authorize: (request: Request) => boolean | Promise<boolean>;
  /**
   * Where it is mounted ('/admin/limits'): its paths are read below this, whole segments only ('/admin'
   * serves '/admin' and '/admin/...', never '/adminx').
   * @default '' (the root)
   */
  basePath?: string;
  /**
   * The `WWW-Authenticate` header of a 401: `'Basic realm="sluice admin"'` makes a browser ask for a user
   * name and password (for an authorize that checks Basic credentials).
   * @default 'Bearer realm="sluice admin"'
   */
  challenge?: string;
  /** Called with every action asked, done, refused or failed: the audit log. A listener that throws is reported, never answered. */
  onAction?: (action: AdminAction) => void;
}

function limitersValue(name: string, value: unknown): readonly Limiter[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new SluiceTypeError(name, value, `adminRouter needs ${name}: a non-empty array of limiters`);
  for (const limiter of value as Array<Partial<Limiter> | null>)
    if (typeof limiter?.tryAcquire !== 'function' || typeof limiter.prefix !== 'string')
      throw new SluiceTypeError(name, limiter, `each of ${name} must be a limiter, got ${describe(limiter)}`);
  return value as readonly Limiter[];
}

function authorizeValue(name: string, value: unknown): AdminRouterOptions['authorize'] {
  if (typeof value !== 'function')
    throw new SluiceTypeError(
      name,
      value,
      `adminRouter needs ${name}(request): the router changes limits, so it has no default that lets everyone in`,
    );
  return value as AdminRouterOptions['authorize'];
}

/** A path from the root, without its trailing slashes ('' is the root). */
function basePathValue(name: string, value: unknown): string {
  if (typeof value !== 'string')
    throw new SluiceTypeError(name, value, `${name} must be a string, got ${describe(value)}`);
  const path = value.replace(/\/+$/, '');
  if (path !== '' && !path.startsWith('/'))
    throw new SluiceRangeError(name, value, `${name} must start with '/', got ${JSON.stringify(value)}`);
  return path;
}

// A scheme, then printable parameters: never a line break (a header of its own).
const CHALLENGE = /^[A-Za-z][\w!#$%&'*+.^`|~-]*( [\x20-\x7e]*)?$/;

function challengeValue(name: string, value: unknown): string {
  if (typeof value !== 'string' || !CHALLENGE.test(value))
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be a WWW-Authenticate value (a scheme, then its parameters), got ${describe(value)}`,
    );
  return value;
}

function onActionValue(name: string, value: unknown): (action: AdminAction) => void {
  if (typeof value !== 'function')
    throw new SluiceTypeError(name, value, `${name} must be a function, got ${describe(value)}`);
  return value as (action: AdminAction) => void;
}

/** adminRouter's options: each checked, an unknown one refused by name (a misspelt `basepath` would serve the root). */
export const ADMIN_ROUTER_OPTIONS = {
  limiters: required(limitersValue),
  authorize: required(authorizeValue),
  basePath: option(basePathValue, ''),
  challenge: option(challengeValue, 'Bearer realm="sluice admin"'),
  onAction: optional(onActionValue),
} as const satisfies SchemaOf<AdminRouterOptions>;
