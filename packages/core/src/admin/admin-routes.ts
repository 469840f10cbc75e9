import type { Algorithm } from '../algorithms/algorithm.js';
import { RULE_FACTORIES } from '../algorithms/rule-spec.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import {
  type OptionSchema,
  type ParsedOptions,
  knownOptions,
  oneOf,
  option,
  optional,
  parseOptions,
  required,
} from '../foundation/options.js';
import { describe } from '../foundation/validate.js';

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
  /**
   * The limiter (its prefix), when the request's path named one the router serves (one spelling, '/' as
   * '%2F'), the same for a refused request as for one answered; undefined otherwise.
   */
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

/**
 * The admin router's paths, matched whole (a path with a segment more or less than a route's is no route:
 * `keys/k/reset/else` resets nothing), the bodies its writes take and the query its reads take, each parsed
 * by a declared schema that refuses an unknown field by name (a misspelt `ttl` would otherwise list an entry
 * for ever, a misspelt `minutess` answer for 5 minutes).
 */

/** What a key's path may end with. */
const VERBS = ['reset', 'block', 'unblock', 'override'] as const;
type Verb = (typeof VERBS)[number];

/** A request's path below basePath, as the router serves it; `limiter` is the name the path gives. */
export type Route =
  | { readonly at: 'page' }
  | { readonly at: 'limiters' }
  | { readonly at: 'limiter'; readonly limiter: string }
  | { readonly at: 'top'; readonly limiter: string }
  | { readonly at: 'overrides'; readonly limiter: string }
  | { readonly at: 'lists'; readonly limiter: string }
  /** `key` is the segment as sent: decoded (once) only after authorize, where a bad encoding is a 400. */
  | { readonly at: 'key'; readonly limiter: string; readonly key: string; readonly verb: Verb | undefined };

/**
 * The route of a path's segments (below basePath), or undefined (404). The limiter's segment is its name as
 * written, with '/' as '%2F' (a prefix is `[A-Za-z0-9_.-:/]`, so nothing else in it needs encoding): each name
 * has one spelling in a path, so a gate in front matching `/api/limiters/secret/` on the raw path sees every
 * request for 'secret' (`%73ecret` names no limiter).
 */
export function routeOf(parts: readonly string[]): Route | undefined {
  const [first, second, segment, kind, key, verb] = parts;
  if (parts.length === 1 && (first === '' || first === 'index.html')) return { at: 'page' };
  if (first !== 'api' || second !== 'limiters') return undefined;
  if (parts.length === 2) return { at: 'limiters' };
  const limiter = segment === undefined ? undefined : limiterName(segment);
  if (limiter === undefined) return undefined;
  if (parts.length === 3) return { at: 'limiter', limiter };
  if (parts.length === 4)
    return kind === 'top' || kind === 'overrides' || kind === 'lists' ? { at: kind, limiter } : undefined;
  if (kind !== 'keys' || key === undefined || parts.length > 6) return undefined;
  if (verb === undefined) return { at: 'key', limiter, key, verb: undefined };
  return (VERBS as readonly string[]).includes(verb) ? { at: 'key', limiter, key, verb: verb as Verb } : undefined;
}

/** A limiter's name from its path segment; undefined for any other percent-encoding than '%2F' (for '/'). */
function limiterName(segment: string): string | undefined {
  const name = segment.replaceAll('%2F', '/');
  return name === '' || name.includes('%') ? undefined : name;
}

/** The change a request asks for (undefined: a read, or no route). */
export function actionOf(method: string, route: Route | undefined): AdminAction['action'] | undefined {
  if (route?.at === 'lists') {
    // Allow or deny: the body says, once it is read.
    if (method === 'POST') return 'list';
    if (method === 'DELETE') return 'unlist';
    return undefined;
  }
  if (route?.at !== 'key' || route.verb === undefined) return undefined;
  const { verb } = route;
  if (verb === 'override') return method === 'DELETE' ? 'remove-override' : method === 'PUT' ? 'override' : undefined;
  return method === 'POST' ? verb : undefined;
}

/** A field the limiter method it is handed to checks (one home for each check): here only required. */
function given(name: string, value: unknown): unknown {
  if (value === undefined) throw new SluiceTypeError(name, value, `the request body needs ${name}`);
  return value;
}

/** As `given`, for a field that may be left out. */
const passed = (_name: string, value: unknown): unknown => value;

/** The fields of one of an override's rules. */
const OVERRIDE_RULE_FIELDS = { kind: true, params: true, name: true } as const;

/** The rules of an override as the request gives them: [{ kind, params, name? }] (see ruleFromSpec). */
function rulesValue(name: string, value: unknown): Algorithm[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be a non-empty array of { kind, params, name? }, got ${describe(value)}`,
    );
  return value.map((rule: unknown, i: number) => {
    // Written by an operator now, not read from a stored record: each factory's own option names (an earlier
    // name is refused saying the new one), and no field of the rule dropped unread.
    const r = knownOptions(`${name}[${i}]`, OVERRIDE_RULE_FIELDS, rule as object, true) as Record<string, unknown>;
    const factory =
      typeof r.kind === 'string' && Object.hasOwn(RULE_FACTORIES, r.kind)
        ? RULE_FACTORIES[r.kind as keyof typeof RULE_FACTORIES]
        : undefined;
    if (factory === undefined)
      throw new SluiceTypeError(
        `${name}[${i}].kind`,
        r.kind,
        `a rule's kind must be an algorithm, got ${describe(r.kind)}`,
      );
    if (typeof r.params !== 'object' || r.params === null || Array.isArray(r.params))
      throw new SluiceTypeError(
        `${name}[${i}].params`,
        r.params,
        `a rule's params must be an object, got ${describe(r.params)}`,
      );
    return factory({ ...r.params, ...(r.name === undefined ? {} : { name: r.name }) } as never);
  });
}

/** The body each write takes (reset, unblock and removing an override take none: `{}` or nothing). */
export const BODIES = {
  list: {
    list: required(oneOf(['allow', 'deny'])),
    entries: required(given),
    ttlMs: optional(passed),
    reason: optional(passed),
  },
  unlist: { entries: required(given) },
  block: { ms: required(given) },
  override: { rules: required(rulesValue) },
  none: {},
} as const satisfies Record<string, OptionSchema>;

/** A body parsed by its schema: an unknown field is a 400 naming it and the fields there are. */
export function parseBody<S extends OptionSchema>(what: string, schema: S, body: unknown): ParsedOptions<S> {
  return parseOptions(`${what} bodies`, schema, body, true);
}

/** A whole number from the query, within bounds. */
const wholeNumber =
  (min: number, max: number) =>
  (name: string, raw: unknown): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new SluiceRangeError(
        name,
        raw,
        `${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
      );
    return n;
  };

/** The query each read takes; every other API route (writes too) takes none. */
export const QUERIES = {
  top: {
    n: option(wholeNumber(1, 1_000), 10),
    minutes: option(wholeNumber(1, 15), 5),
  },
  overrides: {
    cursor: optional(passed),
  },
  none: {},
} as const satisfies Record<string, OptionSchema>;

/** A query parsed by its schema: an unknown parameter, or one given twice, is a 400 naming it. */
export function parseQuery<S extends OptionSchema>(what: string, schema: S, url: URL): ParsedOptions<S> {
  const given: Record<string, string> = {};
  url.searchParams.forEach((value, name) => {
    if (Object.hasOwn(given, name)) throw new SluiceTypeError(name, value, `${what} takes ${name} once, got it twice`);
    given[name] = value;
  });
  return parseOptions(`${what} queries`, schema, given, true);
}
