/** What every framework subpath (/fetch, /hono, /koa) re-exports beside its own adapter: keys, the request context, option types. */
export { byIp, byRoute, byUser } from './keys.js';
export type { AnyRequestKey, ByIpOptions, KeyStrategy, RequestKeyMark } from './keys.js';
export { currentRequestContext } from './context.js';
export type { RequestContext } from './context.js';
export type { LimitedBody, MissingKeyPolicy, RateLimitOptions, RejectedBody } from './options.js';
export type { AfterResponseOptions, ResponseEnd } from './after-response.js';
export type { RequestView } from './view.js';
