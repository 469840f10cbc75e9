import { Metadata, type StatusObject, status } from '@grpc/grpc-js';
import type { Decision } from '@sluice/core';
import { type Verdict, limitedBody } from '@sluice/core/internal';

/** A verdict that refuses a call: limited, or a call with no valid key or permits, or one that went away. */
export type RefusedVerdict = Extract<Verdict<unknown>, { kind: 'limited' | 'rejected' | 'abandoned' }>;

/**
 * The status a refused call ends with, wherever it is refused (grpcRateLimit, the Nest guard on a gRPC
 * microservice): limited, RESOURCE_EXHAUSTED with the reason in its details and limitTrailers' metadata;
 * a key or permits the call cannot give, or a call that went away while it waited, INVALID_ARGUMENT.
 * @example
 * const verdict = await evaluate(call, view)
 * if (verdict.kind === 'limited') call.sendStatus(refusalStatus(verdict))
 */
export function refusalStatus(verdict: RefusedVerdict): StatusObject {
  if (verdict.kind === 'limited') {
    return {
      code: status.RESOURCE_EXHAUSTED,
      details: limitedDetails(verdict.decision),
      metadata: limitTrailers(verdict.decision, verdict.headers),
    };
  }
  const details = verdict.kind === 'rejected' ? verdict.body.message : 'the call went away';
  return { code: status.INVALID_ARGUMENT, details, metadata: new Metadata() };
}

/** The status details of a limited call: the body every adapter sends, as one line. */
function limitedDetails(decision: Decision): string {
  const body = limitedBody(decision);
  const after = body.retryAfterSeconds === null ? 'never fits' : `retry after ${body.retryAfterSeconds} s`;
  return `Too Many Requests: rule ${body.rule} (limit ${body.limit}), ${after}${body.reason ? `: ${body.reason}` : ''}`;
}

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
