import { SluiceRangeError } from '../foundation/errors.js';

/**
 * What the admin router checks before it trusts a request: its origin and content type (from headers only,
 * before authorize and before any body is read), and, once at construction, that `authorize` can say no.
 */

/**
 * The origin every URL the router makes is built on: never the request's Host, which its sender chose. Its
 * scheme is the connection's (the node handler knows whether its socket is TLS): the Origin check reads it.
 */
export const ADMIN_ORIGIN = 'http://sluice.invalid';
/** ADMIN_ORIGIN for a request that came over TLS. */
export const ADMIN_TLS_ORIGIN = 'https://sluice.invalid';

/** A request the router answers without going further: its status and what the body says why. */
export interface Refusal {
  readonly status: number;
  readonly error: string;
  readonly message: string;
}

// A host name or address, and a port: nothing that could carry a path, a query or credentials.
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$/;

/**
 * A request whose Host header is no host (`h/api/limiters/secret/...?`) is refused whatever the runtime did
 * with it: node:http passes it on as sent, and a runtime that builds the request's URL from it (as servers
 * for Fetch handlers do) would have moved the path the router reads.
 */
export function refuseHost(request: Request): Refusal | undefined {
  const host = request.headers.get('host');
  if (host === null || HOST.test(host)) return undefined;
  return { status: 400, error: 'Bad Request', message: 'the Host header must be a host name or address' };
}

// Methods a browser sends cross-site without asking (and that change nothing here).
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a request that may change something is refused before authorize, or undefined. A browser says where a
 * request comes from (`Sec-Fetch-Site`, or `Origin` in older ones): anything but the router's own origin (or
 * the user typing it) is refused, whatever credentials ride along. A write must be `application/json`: a
 * cross-site page cannot send that without a CORS preflight, which the router never grants.
 */
export function refuseBeforeAuthorize(request: Request, method: string): Refusal | undefined {
  if (SAFE_METHODS.has(method)) return undefined;
  const site = request.headers.get('sec-fetch-site');
  if (site !== null ? site !== 'same-origin' && site !== 'none' : !sameOrigin(request))
    return {
      status: 403,
      error: 'Forbidden',
      message: 'the admin router takes changes only from its own origin: this request came from another site',
    };
  const type = request.headers.get('content-type');
  if (type === null || type.split(';')[0]?.trim().toLowerCase() !== 'application/json')
    return {
      status: 415,
      error: 'Unsupported Media Type',
      message:
        'a request that changes something must be sent as Content-Type: application/json (its body may be empty)',
    };
  return undefined;
}

/**
 * No Origin: not a browser's cross-site request (curl, the CLI, a server). An Origin must be the origin the
 * request was sent to, scheme, host and port: a browser sets Host itself, so a page elsewhere cannot make them
 * agree. The scheme is the request URL's (the connection's as the runtime or the node handler saw it), and
 * Host's port is read under it: `Origin: https://h:443` is not `Host: h` over plain HTTP (port 80). Behind a
 * proxy that terminates TLS the router sees HTTP, so an https Origin is refused there: browsers that send
 * Sec-Fetch-Site (all current ones) are judged by it and never reach this check.
 */
function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin');
  if (origin === null) return true;
  try {
    const from = new URL(origin); // 'null' (a sandboxed frame, a file) does not parse: refused
    const url = new URL(request.url);
    const host = request.headers.get('host') ?? url.host;
    return from.origin === new URL(`${url.protocol}//${host}`).origin;
  } catch {
    return false;
  }
}

// Credentials an unset secret turns into: `Bearer ${process.env.TOKEN}` with TOKEN unset is 'Bearer undefined'.
const EMPTY_SECRETS = ['undefined', 'null', ''];
const PROBES: ReadonlyArray<readonly [string, Record<string, string>]> = [
  ['no credentials', {}],
  // A cookie parser reads an empty header as no cookies: `cookies.session === process.env.SESSION` is then
  // undefined === undefined.
  ['an empty Cookie header', { cookie: '' }],
  ...EMPTY_SECRETS.map((secret): [string, Record<string, string>] => [
    `cookies set to ${JSON.stringify(secret)}`,
    { cookie: ['session', 'token', 'sid', 'auth', 'admin'].map((name) => `${name}=${secret}`).join('; ') },
  ]),
  ...EMPTY_SECRETS.flatMap(
    (secret): Array<[string, Record<string, string>]> => [
      [
        `Authorization: Bearer ${secret}`,
        { authorization: `Bearer ${secret}`, 'x-api-key': secret, 'x-admin-token': secret },
      ],
      [`Authorization: Basic (${secret}:${secret})`, { authorization: `Basic ${btoa(`${secret}:${secret}`)}` }],
      [`Authorization: ${secret}`, { authorization: secret }],
    ],
  ),
];

/**
 * Asks `authorize` about requests no operator means to let in, each without a query string (so a secret read
 * from one is absent): no credentials; an empty Cookie header; an unset secret's 'undefined', 'null' or '' as
 * a token, a password, or the value of a few common cookie names. It cannot know every place a secret may be
 * read from (another cookie name, a query parameter): it catches the common shapes, not all. A synchronous authorize that admits one is refused here
 * (the router is not made); an asynchronous one is checked by the promise returned, which resolves to the
 * error (the router then serves nothing) or undefined.
 */
export function checkFailsClosed(
  authorize: (request: Request) => boolean | Promise<boolean>,
  basePath: string,
): Promise<SluiceRangeError | undefined> | undefined {
  const answers = PROBES.map(([label, headers]) => {
    try {
      const said = authorize(new Request(`${ADMIN_ORIGIN}${basePath}/api/limiters`, { headers }));
      return { label, said };
    } catch {
      return { label, said: false }; // a throw denies, as it does for a real request
    }
  });
  const verdict = (admitted: string | undefined) =>
    admitted === undefined
      ? undefined
      : new SluiceRangeError(
          'authorize',
          admitted,
          `authorize let in a request with ${admitted}: an unset secret lets everyone in, so the admin router ` +
            'refuses to run (check that the secret is set and never empty before comparing with it)',
        );
  if (answers.every(({ said }) => typeof said === 'boolean')) {
    const error = verdict(answers.find(({ said }) => said === true)?.label);
    if (error !== undefined) throw error;
    return undefined;
  }
  return Promise.all(
    answers.map(async ({ label, said }) =>
      (await Promise.resolve(said).catch(() => false)) === true ? label : undefined,
    ),
  ).then((labels) => verdict(labels.find((label) => label !== undefined)));
}
