import { SluiceRangeError, SluiceTypeError } from '../errors.js';
import { describe, nonNegativeInteger, optionsObject } from '../validate.js';
import { ipKey } from './ip.js';
import type { HttpRequestLike } from './request.js';

/**
 * Picks the rate-limit key of a request. Returning undefined, null or '' means "this request has no such key"
 * (no user signed in, say); the middleware then does what `onMissingKey` says, never one bucket for all.
 */
export type KeyStrategy<Req = HttpRequestLike> = (req: Req) => string | undefined | null;

export interface ByIpOptions {
  /**
   * Bits of an IPv6 address that identify one client: providers hand out /56 or /64 prefixes, and a
   * client can rotate through every address in its prefix.
   * @default 56
   */
  ipv6Subnet?: number;
  /**
   * How many reverse proxies you run in front of this server. 0 trusts no `X-Forwarded-For` at all: any
   * client can write that header, so reading it without a proxy of yours that overwrites it lets every
   * request pick its own bucket. With N proxies, the client is the N-th address from the right.
   * (Express's and Fastify's own `trust proxy` settings already shape `req.ip`, which is used when present.)
   * @default 0
   */
  trustProxy?: number;
}

function forwardedClient(header: string | string[] | undefined, hops: number): string | undefined {
  if (header === undefined) return undefined;
  const hopsList = (Array.isArray(header) ? header.join(',') : header).split(',').map((s) => s.trim());
  return hopsList[hopsList.length - hops];
}

/**
 * Keys a request by its client address: `ip:203.0.113.7`, or for IPv6 the client's prefix,
 * `ip:2001:db8:0:100::/56`.
 *
 * @example rateLimit({ limiter, key: byIp({ trustProxy: 1 }) }) // behind one load balancer
 */
export function byIp(options?: ByIpOptions): KeyStrategy<HttpRequestLike> {
  optionsObject('byIp options', options, false);
  const subnet = options?.ipv6Subnet === undefined ? 56 : nonNegativeInteger('ipv6Subnet', options.ipv6Subnet);
  if (subnet > 128) throw new SluiceRangeError('ipv6Subnet', subnet, `ipv6Subnet must be an integer in 0..128, got ${subnet}`);
  const hops = options?.trustProxy === undefined ? 0 : nonNegativeInteger('trustProxy', options.trustProxy);
  return (req) => {
    const address =
      (hops > 0 ? forwardedClient(req.headers['x-forwarded-for'], hops) : undefined) ??
      (typeof req.ip === 'string' ? req.ip : undefined) ??
      req.socket?.remoteAddress;
    if (address === undefined) return undefined;
    const key = ipKey(address, subnet);
    return key === undefined ? undefined : `ip:${key}`;
  };
}

/**
 * Keys a request by its authenticated user: `user:<id>`. `select` reads the id from wherever your
 * authentication put it; a request without one has no key (see `onMissingKey`).
 *
 * @example rateLimit({ limiter, key: byUser((req: Request) => req.user?.id) })
 */
export function byUser<Req = HttpRequestLike>(select: (req: Req) => string | number | undefined | null): KeyStrategy<Req> {
  if (typeof select !== 'function') {
    throw new SluiceTypeError('select', select, `byUser needs a function that reads the user id from a request, got ${describe(select)}`);
  }
  return (req) => {
    const id = select(req);
    if (id === undefined || id === null || id === '') return undefined;
    return `user:${String(id)}`;
  };
}

/**
 * Keys a request by its method and path (`route:GET /search`): one bucket per endpoint, shared by all
 * clients. The query string is not part of the key.
 */
export function byRoute(): KeyStrategy<HttpRequestLike> {
  return (req) => {
    const url = req.originalUrl ?? req.url ?? '';
    const query = url.indexOf('?');
    return `route:${req.method ?? 'GET'} ${query === -1 ? url : url.slice(0, query)}`;
  };
}
