/**
 * @sluice/cli: the `sluice` command, and `runCli` to run it from code (tests, scripts): inspect, reset,
 * block, unblock, top, allow, deny, unlist and lists, against the Redis state a prefix's limiters keep.
 *
 * @module @sluice/cli
 */
export { runCli } from './cli.js';
export type { CliIo } from './cli.js';
