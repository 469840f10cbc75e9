import { Metadata } from '@grpc/grpc-js';
import type { Decision } from '@sluice/core';

/**
 * The trailing metadata of a refused call: `retry-after` (whole seconds, as HTTP's header), the RateLimit
 * fields as their lower-case header names, and `grpc-retry-pushback-ms`, which gRPC clients' retry policies
 * obey (a call that can never fit gets a negative pushback: do not retry).
 * @example
 * call.sendStatus({ code: status.RESOURCE_EXHAUSTED, details: 'Too Many Requests', metadata: limitTrailers(decision, fields) })
 */
export function limitTrailers(decision: Decision, fields: readonly [string, string][]): Metadata {
  const trailers = new Metadata();
  for (const [name, value] of fields) trailers.set(name.toLowerCase(), value);
  const retryMs = decision.retryAfterMs;
  trailers.set('grpc-retry-pushback-ms', Number.isFinite(retryMs) ? String(Math.ceil(retryMs)) : '-1');
  return trailers;
}

/**
 * How long a refused call's trailers say to wait, in ms: `grpc-retry-pushback-ms`, else `retry-after`
 * (seconds); undefined when they say nothing, Infinity when the call can never pass.
 * @example
 * if (error.code === status.RESOURCE_EXHAUSTED) await sleep(pushbackMs(error.metadata) ?? 1_000)
 */
export function pushbackMs(trailers: Metadata | undefined): number | undefined {
  if (trailers === undefined) return undefined;
  const pushback = trailers.get('grpc-retry-pushback-ms')[0];
  if (typeof pushback === 'string' && /^-?\d+$/.test(pushback)) {
    const ms = Number(pushback);
    return ms < 0 ? Number.POSITIVE_INFINITY : ms;
  }
  const after = trailers.get('retry-after')[0];
  if (typeof after === 'string' && /^\d+$/.test(after)) return Number(after) * 1000;
  return undefined;
}
