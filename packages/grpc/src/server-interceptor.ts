import {
  Metadata,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServerMethodDefinition,
  ServerInterceptingCall,
  status,
} from '@grpc/grpc-js';
import { type Decision, SluiceTypeError } from '@sluice/core';
import type { RateLimitOptions } from '@sluice/core/http';
import {
  type OptionNames,
  inCall,
  knownOptions,
  type Verdict,
  createEvaluator,
  isInputError,
} from '@sluice/core/internal';
import { type GrpcCall, callView } from './call.js';
import { refusalStatus } from './trailers.js';

/** grpcRateLimit's options: the HTTP adapters' (key, permits, plan, skip, onMissingKey, ...) over a GrpcCall. */
export interface GrpcRateLimitOptions
  extends Omit<
    RateLimitOptions<GrpcCall>,
    | 'permitsAfterResponse'
    | 'skipFailedRequests'
    | 'skipSuccessfulRequests'
    | 'requestWasSuccessful'
    | 'onAccountingError'
    | 'concurrency'
  > {
  /**
   * Which methods are limited: their full paths (`/package.Service/Method`), or a test of the path.
   * @default every method
   */
  methods?: readonly string[] | ((method: string) => boolean);
  /** Called for each refused call (to log or count it), before RESOURCE_EXHAUSTED is sent. */
  onLimited?: (decision: Decision, call: GrpcCall) => void;
}

/** Every name of GrpcRateLimitOptions: the HTTP adapters' less those a call has no use for, and its own. */
const GRPC_RATE_LIMIT_OPTIONS: OptionNames<GrpcRateLimitOptions> = {
  limiter: true,
  key: true,
  onMissingKey: true,
  trustProxy: true,
  proxyHeader: true,
  permits: true,
  headers: true,
  maxWaitMs: true,
  skip: true,
  plan: true,
  onInvalidInput: true,
  methods: true,
  onLimited: true,
};

/**
 * A server interceptor for @grpc/grpc-js (1.10+: `new Server({ interceptors: [...] })`) that decides each
 * call when its metadata arrives, before the handler runs, unary and streaming alike: one decision per call
 * (a stream that ends early is counted once). Allowed: the RateLimit fields go in the response's initial
 * metadata. Refused: RESOURCE_EXHAUSTED with trailing metadata `retry-after` (seconds), `grpc-retry-pushback-ms`
 * (what gRPC's own retry policy obeys) and the RateLimit fields; a key or permits the call cannot give (a
 * metadata value too long, say): INVALID_ARGUMENT; a key function that throws: INTERNAL with its message.
 * @example
 * ```ts
 * const server = new Server({ interceptors: [grpcRateLimit({ limiter, key: byMetadata('x-tenant-id') })] })
 * ```
 */
export function grpcRateLimit(options: GrpcRateLimitOptions): ServerInterceptor {
  return inCall('grpcRateLimit', () => {
    knownOptions('grpcRateLimit options', GRPC_RATE_LIMIT_OPTIONS, options, true);
    const { methods, onLimited, ...http } = options;
    const evaluate = createEvaluator<GrpcCall>(http, 'grpcRateLimit', GRPC_RATE_LIMIT_OPTIONS);
    const applies = methodTest(methods);
    if (onLimited !== undefined && typeof onLimited !== 'function') {
      throw new SluiceTypeError('onLimited', onLimited, 'onLimited must be a function');
    }
    return (method: ServerMethodDefinition<unknown, unknown>, call: ServerInterceptingCallInterface) => {
      if (!applies(method.path)) return new ServerInterceptingCall(call);
      let allowedFields: readonly [string, string][] = [];
      const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
        start: (next) =>
          next({
            onReceiveMetadata: (metadata, proceed) => {
              const info: GrpcCall = {
                method: method.path,
                metadata,
                peerAddress: call.getConnectionInfo().remoteAddress,
                requestStream: method.requestStream,
                responseStream: method.responseStream,
              };
              decide(info).then(
                (verdict) => {
                  if (verdict.kind === 'allowed') allowedFields = verdict.headers;
                  if (verdict.kind === 'allowed' || verdict.kind === 'skipped') return proceed(metadata);
                  if (verdict.kind === 'limited') onLimited?.(verdict.decision, info);
                  intercepting.sendStatus(refusalStatus(verdict));
                },
                (error: unknown) =>
                  intercepting.sendStatus({
                    code: isInputError(error) ? status.INVALID_ARGUMENT : status.INTERNAL,
                    details: `sluice: ${error instanceof Error ? error.message : String(error)}`,
                    metadata: new Metadata(),
                  }),
              );
            },
          }),
        sendMetadata: (metadata, next) => {
          for (const [name, value] of allowedFields) metadata.set(name.toLowerCase(), value);
          next(metadata);
        },
      });
      return intercepting;
    };
    function decide(info: GrpcCall): Promise<Verdict<unknown>> {
      return evaluate(info, callView(info));
    }
  });
}

function methodTest(methods: GrpcRateLimitOptions['methods']): (method: string) => boolean {
  if (methods === undefined) return () => true;
  if (typeof methods === 'function') return methods;
  if (!Array.isArray(methods) || methods.some((m) => typeof m !== 'string')) {
    throw new SluiceTypeError(
      'methods',
      methods,
      'methods must be method paths (/package.Service/Method) or a function',
    );
  }
  const set = new Set(methods);
  return (method) => set.has(method);
}
