import {
  type Interceptor,
  InterceptingCall,
  type InterceptingListener,
  type InterceptorOptions,
  type Metadata,
  type NextCall,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { SluiceRangeError, SluiceTypeError, type Throttle } from '@sluice/core';
import { type OptionNames, inCall, knownOptions } from '@sluice/core/internal';
import { pushbackMs } from './trailers.js';

/** grpcRetryOnLimit's options. */
export interface GrpcRetryOptions {
  /**
   * How many times a refused unary call is sent again.
   * @default 2
   */
  maxRetries?: number;
  /**
   * The longest wait the client accepts: a server asking for more gets the refusal passed on at once.
   * @default 60_000
   */
  maxWaitMs?: number;
  /**
   * An outgoing throttle (`throttle({ limiter })`) to pause for the server's wait: every node's calls made
   * through it hold back for as long, not only this call.
   */
  throttle?: Throttle;
  /** The throttle key to pause (the server's name, say). @default the throttle's own key */
  throttleKey?: string;
}

const GRPC_RETRY_OPTIONS: OptionNames<GrpcRetryOptions> = {
  maxRetries: true,
  maxWaitMs: true,
  throttle: true,
  throttleKey: true,
};

/**
 * A client interceptor for @grpc/grpc-js that reads a RESOURCE_EXHAUSTED refusal's wait
 * (`grpc-retry-pushback-ms`, else `retry-after`, as grpcRateLimit sends them), waits it out and sends a unary
 * call again, up to `maxRetries` times; a streaming call's refusal is passed on (its messages cannot be sent
 * twice), after pausing the throttle. A refusal without a wait, or one longer than `maxWaitMs`, is passed on at
 * once.
 * @example
 * ```ts
 * const client = new Greeter(address, credentials.createInsecure(), { interceptors: [grpcRetryOnLimit({ throttle: calls })] })
 * ```
 */
export function grpcRetryOnLimit(options: GrpcRetryOptions = {}): Interceptor {
  return inCall('grpcRetryOnLimit', () => {
    knownOptions('grpcRetryOnLimit options', GRPC_RETRY_OPTIONS, options, false);
    const maxRetries = options.maxRetries ?? 2;
    const maxWaitMs = options.maxWaitMs ?? 60_000;
    if (!Number.isSafeInteger(maxRetries) || maxRetries < 0)
      throw new SluiceRangeError('maxRetries', maxRetries, `maxRetries must be an integer >= 0, got ${maxRetries}`);
    if (!(maxWaitMs >= 0))
      throw new SluiceRangeError('maxWaitMs', maxWaitMs, `maxWaitMs must be a number >= 0, got ${maxWaitMs}`);
    const { throttle, throttleKey } = options;
    if (throttle !== undefined && typeof throttle?.pause !== 'function')
      throw new SluiceTypeError('throttle', throttle, 'throttle must be a sluice Throttle (throttle({ limiter }))');

    /** The wait a refusal asks for, paused on the throttle; undefined when it is not to be waited. */
    const waitFor = (result: StatusObject): number | undefined => {
      if (result.code !== status.RESOURCE_EXHAUSTED) return undefined;
      const ms = pushbackMs(result.metadata);
      if (ms === undefined || ms > maxWaitMs) return undefined;
      if (throttle !== undefined && ms > 0) void throttle.pause(ms, throttleKey).catch(() => {});
      return ms;
    };

    return (callOptions: InterceptorOptions, nextCall: NextCall) => {
      const definition = callOptions.method_definition;
      if (definition.requestStream || definition.responseStream) {
        return new InterceptingCall(nextCall(callOptions), {
          start: (metadata, _listener, next) =>
            next(metadata, {
              onReceiveStatus: (result, forward) => {
                waitFor(result);
                forward(result);
              },
            }),
        });
      }
      // A unary call: its one request and metadata are kept, and sent again on a fresh call after the wait.
      let request: unknown;
      let requestMetadata: Metadata;
      return new InterceptingCall(nextCall(callOptions), {
        start: (metadata, listener, next) => {
          requestMetadata = metadata;
          let message: unknown;
          let hasMessage = false;
          // The first attempt's message is held (grpc-js holds its status until it is passed on).
          let deliver: ((m: unknown) => void) | undefined;
          let attempts = 0;
          const finish = (result: StatusObject, forward: (s: StatusObject) => void) => {
            const ms = attempts < maxRetries ? waitFor(result) : undefined;
            if (ms === undefined) {
              if (deliver !== undefined) deliver(message);
              else if (hasMessage) listener.onReceiveMessage(message);
              forward(result);
              return;
            }
            attempts++;
            setTimeout(() => resend(forward), ms);
          };
          const resend = (forward: (s: StatusObject) => void) => {
            const retry = nextCall(callOptions);
            const retryListener: InterceptingListener = {
              onReceiveMetadata: () => {},
              onReceiveMessage: (m: unknown) => {
                message = m;
                hasMessage = true;
              },
              onReceiveStatus: (result: StatusObject) => finish(result, forward),
            };
            retry.start(requestMetadata.clone(), retryListener);
            retry.sendMessage(request);
            retry.halfClose();
          };
          next(metadata, {
            onReceiveMessage: (m: unknown, pass: (m: unknown) => void) => {
              message = m;
              hasMessage = true;
              deliver = pass;
            },
            onReceiveStatus: (result: StatusObject, forward: (s: StatusObject) => void) => finish(result, forward),
          });
        },
        sendMessage: (m, next) => {
          request = m;
          next(m);
        },
      });
    };
  });
}
