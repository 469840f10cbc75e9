import { SluiceRangeError, SluiceTypeError, inCall } from '../../foundation/errors.js';
import { type OptionNames, knownOptions } from '../../foundation/options.js';
import { describe, nonNegativeInteger } from '../../foundation/validate.js';
import { isAddress } from '../../engine/address.js';
import { hopAddress, ipKey } from './ip.js';
import type { HttpRequestLike } from './request.js';
import { type RequestView, nodeRequestView } from './view.js';

/**
 * Picks the rate-limit key of a request: a function of the framework's own request (Express's `Request`,
 * Fastify's `FastifyRequest`, Koa's and Hono's `Context`, a Fetch `Request`), and of a framework-neutral
 * view of it (what byIp and byRoute read). Returning undefined, null or '' means "this request has no such
 * key" (no user signed in, say); the middleware then does what `onMissingKey` says, never one bucket for all.
 */
export type KeyStrategy<Req = HttpRequestLike> = (req: Req, view: RequestView) => string | undefined | null;

/**
 * A key strategy that reads only the framework-neutral view, so it fits every adapter's request type.
 * Called directly with a node:http, Express or Fastify request alone, it reads that request.
 */
export type AnyRequestKey = (req: unknown, view?: RequestView) => string | undefined | null;

const REQUEST_KEY: unique symbol = Symbol.for('sluice.requestKey');

/**
 * The mark of a strategy that is a function of the request (what byIp, byUser and byRoute make): a method
 * decorator given one keys each call by the current request instead of by the call's arguments.
 */
export interface RequestKeyMark {
  readonly [REQUEST_KEY]: true;
}

function requestStrategy<F extends (...args: never[]) => unknown>(strategy: F): F & RequestKeyMark {
  return Object.assign(strategy, { [REQUEST_KEY]: true as const });
}

/** True for a strategy made by byIp, byUser or byRoute: a function of the request, not of a method call. */
export function isRequestStrategy(value: unknown): value is KeyStrategy<unknown> {
  return typeof value === 'function' && (value as { [REQUEST_KEY]?: unknown })[REQUEST_KEY] === true;
}

/** The view an adapter passed, or, for a direct call with a node-style request, that request's. */
function viewFor(req: unknown, view: RequestView | undefined): RequestView {
  if (view !== undefined) return view;
  const headers = (req as { headers?: unknown } | null)?.headers;
  if (typeof headers !== 'object' || headers === null || typeof (headers as { get?: unknown }).get === 'function') {
    throw new SluiceTypeError(
      'view',
      view,
      'a key strategy called directly needs a node:http, Express or Fastify request, or the RequestView an ' +
        'adapter passes',
    );
  }
  return nodeRequestView(req as HttpRequestLike);
}

/** Options of `byIp`: how many proxies in front of the app to trust, and which header they write. */
export interface ByIpOptions {
  /**
   * Bits of an IPv6 address that identify one client: providers hand out /56 or /64 prefixes, and a
   * client can rotate through every address in its prefix. (IPv6 addresses that embed an IPv4 address,
   * such as NAT64 and Teredo, are keyed by that IPv4 address; see ipKey.)
   * @default 56
   */
  ipv6Subnet?: number | undefined;
  /**
   * How many reverse proxies you run in front of this server. 0 trusts no proxy header at all: any
   * client can write one, so reading it without a proxy of yours that overwrites it lets every request pick
   * its own bucket. With N proxies, the client is the N-th address from the right of `proxyHeader`.
   * (Express's and Fastify's own `trust proxy` settings already shape `req.ip`, which is used when present
   * and this is 0.)
   * @default 0
   */
  trustProxy?: number | undefined;
  /**
   * Which header your proxies append the client to: `'x-forwarded-for'` (`198.51.100.1`, `198.51.100.1:50001`,
   * `[2001:db8::1]:443`), or RFC 7239's `'forwarded'` (`for=198.51.100.1;proto=https, for="[2001:db8::1]:443"`).
   * Only the one you name is read: a client could send the other.
   * @default 'x-forwarded-for'
   */
  proxyHeader?: 'x-forwarded-for' | 'forwarded' | undefined;
}

const PROXY_HEADERS: ReadonlyArray<NonNullable<ByIpOptions['proxyHeader']>> = ['x-forwarded-for', 'forwarded'];

/** The hops of a proxy header, left (furthest) to right (nearest), as they were written. */
function proxyHops(view: RequestView, header: NonNullable<ByIpOptions['proxyHeader']>): string[] | undefined {
  const raw = view.header(header);
  if (raw === undefined) return undefined;
  const elements = raw.split(',');
  if (header === 'x-forwarded-for') return elements;
  // RFC 7239: each element is `pair;pair;...`; the client is its `for=` value ('' when an element has none).
  return elements.map((element) => {
    const pair = element.split(';').find((p) => p.trim().toLowerCase().startsWith('for='));
    return pair === undefined ? '' : pair.trim().slice(4);
  });
}

/**
 * The client address a request came from: with `hops` trusted proxies, the hops-th entry from the right of
 * the proxy header, or the furthest entry when the header lists fewer (the client reached an inner proxy
 * directly); undefined when that entry is no address (a proxy of yours wrote something sluice cannot read:
 * never the proxy's own address instead, which would put every client behind it in one bucket). Without a
 * header, or with no trusted proxy, the peer address the framework gives (`req.ip`, `ctx.ip`, the socket's).
 */
function clientAddress(
  view: RequestView,
  hops: number,
  header: NonNullable<ByIpOptions['proxyHeader']>,
): string | undefined {
  const list = hops > 0 ? proxyHops(view, header) : undefined;
  if (list !== undefined) return hopAddress(list[Math.max(0, list.length - hops)] as string);
  return view.peerAddress;
}

/**
 * Reads the client address of a request with these proxy settings (byIp's, the adapter's own): what the
 * adapters pass to the access lists as `address` (undefined when no address can be read). Never a key.
 * @example
 * const addressOf = clientAddressReader({ trustProxy: 1 })
 * limiter.tryAcquire(key, { address: addressOf(view) })
 */
export function clientAddressReader(
  proxy: Pick<ByIpOptions, 'trustProxy' | 'proxyHeader'> | undefined,
): (view: RequestView) => string | undefined {
  // byIp checks the settings and fills in their defaults: one home for both.
  const settings = byIpSettings(byIp(proxy)) as { trustProxy: number; proxyHeader: 'x-forwarded-for' | 'forwarded' };
  return (view) => {
    const address = clientAddress(view, settings.trustProxy, settings.proxyHeader);
    return address !== undefined && isAddress(address) ? address : undefined;
  };
}

/** The settings of each strategy byIp made, so the middleware's missing-key fallback reads addresses the same way. */
const ipSettings = new WeakMap<object, Required<Pick<ByIpOptions, 'trustProxy' | 'proxyHeader'>>>();

/** The proxy settings of a key strategy made by byIp, or undefined for any other strategy. */
export function byIpSettings(strategy: unknown): Required<Pick<ByIpOptions, 'trustProxy' | 'proxyHeader'>> | undefined {
  return typeof strategy === 'function' ? ipSettings.get(strategy) : undefined;
}

const BY_IP_OPTIONS: OptionNames<ByIpOptions> = { ipv6Subnet: true, trustProxy: true, proxyHeader: true };

/**
 * Keys a request by its client address: `ip:203.0.113.7`, or for IPv6 the client's prefix,
 * `ip:2001:db8:0:100::/56`. A request whose address cannot be read has no key (see `onMissingKey`).
 *
 * @example rateLimit({ limiter, key: byIp({ trustProxy: 1 }) }) // behind one load balancer
 */
export function byIp(options?: ByIpOptions): AnyRequestKey & RequestKeyMark {
  return inCall('byIp', () => {
    knownOptions('byIp options', BY_IP_OPTIONS, options, false);
    const subnet = options?.ipv6Subnet === undefined ? 56 : nonNegativeInteger('ipv6Subnet', options.ipv6Subnet);
    if (subnet > 128)
      throw new SluiceRangeError('ipv6Subnet', subnet, `ipv6Subnet must be an integer in 0..128, got ${subnet}`);
    const hops = options?.trustProxy === undefined ? 0 : nonNegativeInteger('trustProxy', options.trustProxy);
    const header = options?.proxyHeader ?? 'x-forwarded-for';
    if (!PROXY_HEADERS.includes(header)) {
      throw new SluiceRangeError(
        'proxyHeader',
        header,
        `proxyHeader must be 'x-forwarded-for' or 'forwarded', got ${describe(header)}`,
      );
    }
    const strategy: AnyRequestKey = (req, view) => {
      const address = clientAddress(viewFor(req, view), hops, header);
      if (address === undefined) return undefined;
      const key = ipKey(address, subnet);
      return key === undefined ? undefined : `ip:${key}`;
    };
    ipSettings.set(strategy, { trustProxy: hops, proxyHeader: header });
    return requestStrategy(strategy);
  });
}

/**
 * Keys a request by its authenticated user: `user:<id>`. `select` reads the id from wherever your
 * authentication put it; a request without one has no key (see `onMissingKey`).
 *
 * @example rateLimit({ limiter, key: byUser((req: Request) => req.user?.id) })
 */
export function byUser<Req = HttpRequestLike>(
  select: (req: Req) => string | number | undefined | null,
): KeyStrategy<Req> & RequestKeyMark {
  return inCall('byUser', () => {
    if (typeof select !== 'function') {
      throw new SluiceTypeError(
        'select',
        select,
        `byUser needs a function that reads the user id from a request, got ${describe(select)}`,
      );
    }
    return requestStrategy((req: Req) => {
      const id = select(req);
      if (id === undefined || id === null || id === '') return undefined;
      return `user:${String(id)}`;
    });
  });
}

/**
 * Keys a request by its method and path (`route:GET /search`): one bucket per endpoint, shared by all
 * clients. The query string is not part of the key.
 * @example
 * app.use(rateLimit({ limiter, key: byRoute() })) // one bucket per 'GET /search'
 */
export function byRoute(): AnyRequestKey & RequestKeyMark {
  return requestStrategy((req: unknown, view?: RequestView) => {
    const { method, path } = viewFor(req, view);
    return `route:${method} ${path}`;
  });
}
