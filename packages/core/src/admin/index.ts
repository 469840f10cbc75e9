/**
 * @module @sluice/core/admin
 * The admin router: see and act on limiters over HTTP (a Fetch handler and its status page), and
 * `nodeAdminHandler` to mount it where a framework takes Node's request and response.
 */
export { adminRouter } from './admin-router.js';
export type { AdminRouter } from './admin-router.js';
export type { AdminAction } from './admin-routes.js';
export type { AdminRouterOptions } from './admin-options.js';
export { nodeAdminHandler } from './node-handler.js';
