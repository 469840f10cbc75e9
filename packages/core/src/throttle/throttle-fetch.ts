import { KEEPS_PLACE, type KeepsPlace } from '../engine/semaphore-store.js';
import { SluiceTypeError, callerNamed } from '../foundation/errors.js';
import { type OptionNames, knownOptions } from '../foundation/options.js';
import { describe, optionsObject } from '../foundation/validate.js';
import { retryDelayMs } from './retry-after.js';
import type { Throttle, ThrottleRunOptions } from './throttle.js';
import type { FetchFunction } from './throttle-options.js';
import type { ThrottleTicket } from './ticket.js';

/** A throttled fetch's options: run's, and what to do with each response while its ticket is at hand. */
export interface ThrottleFetchOptions extends ThrottleRunOptions {
  /**
   * Called with every response (a refusal too, before it is retried) and the ticket of its try: settle the
   * charge here (`ticket.settle({ tpm: usage.total_tokens })`, reading `response.clone()`). Awaited before
   * fetch goes on; what it throws rejects the fetch.
   */
  onResponse?: (response: Response, ticket: ThrottleTicket) => void | Promise<void>;
}

/** The names of ThrottleRunOptions (here, not beside the type: throttle.ts imports this file). */
export const RUN_OPTIONS: OptionNames<ThrottleRunOptions> = {
  key: true,
  permits: true,
  maxWaitMs: true,
  signal: true,
  priority: true,
};

const FETCH_OPTIONS: OptionNames<ThrottleFetchOptions> = { ...RUN_OPTIONS, onResponse: true };

/** `throttle.fetch`'s init: fetch's own, and the call's throttle options (its key, permits, maxWaitMs, priority). */
export interface ThrottleFetchInit extends RequestInit {
  throttle?: ThrottleFetchOptions;
}

/** What throttledFetch needs of its throttle's options. */
export interface FetchPolicy {
  readonly fetch: FetchFunction;
  readonly maxRetries: number;
  readonly minPauseMs: number;
  readonly maxPauseMs: number;
  /** Wall-clock now: an HTTP date in Retry-After is wall-clock time. */
  readonly nowMs: () => number;
}

/** Statuses by which a provider says "not now". */
const REFUSALS = new Set([429, 503]);

/** A body that can be sent again as it is (a stream is read once). */
function replayable(input: string | URL | Request, init: RequestInit): boolean {
  if (init.body !== undefined && init.body !== null) return !(init.body instanceof ReadableStream);
  return !(input instanceof Request) || input.body === null || !input.bodyUsed;
}

/**
 * A throttled fetch (see Throttle.fetch): each try waits its turn; a 429 or 503 pauses the call's key on
 * every node for what its headers ask, clamped to minPauseMs..maxPauseMs, and the call goes again (at most
 * `maxRetries` times) once its turn comes after the pause, keeping its place: ahead of the calls of its priority
 * that came after it. The last refusal is returned as it came.
 * @example
 * const res = await throttledFetch(llm, url, { method: 'POST', body }, policy)
 */
export async function throttledFetch(
  throttle: Throttle,
  input: string | URL | Request,
  init: ThrottleFetchInit | undefined,
  policy: FetchPolicy,
): Promise<Response> {
  let given: ThrottleFetchOptions | undefined;
  let request: RequestInit;
  try {
    optionsObject('fetch init', init, false);
    ({ throttle: given, ...request } = init ?? {});
    knownOptions('init.throttle', FETCH_OPTIONS, given, false);
    if (given?.onResponse !== undefined && typeof given.onResponse !== 'function') {
      throw new SluiceTypeError(
        'onResponse',
        given.onResponse,
        `onResponse must be a function, got ${describe(given.onResponse)}`,
      );
    }
  } catch (error) {
    throw callerNamed('fetch', error);
  }
  const { onResponse, ...runOptions } = given ?? {};
  const key = runOptions.key ?? throttle.key;
  const again = replayable(input, request);
  for (let attempt = 0; ; attempt++) {
    // A Request is read when it is sent: each try sends a copy.
    const sent = input instanceof Request && again ? input.clone() : input;
    // Sent again, the call keeps its place: ahead of the calls that came after it (they wait on the same pause).
    const options: ThrottleRunOptions & KeepsPlace = { ...runOptions, [KEEPS_PLACE]: attempt > 0 };
    const response = await throttle.run(async (ticket) => {
      const answered = await policy.fetch(sent, request);
      await onResponse?.(answered, ticket);
      return answered;
    }, options);
    if (!REFUSALS.has(response.status)) return response;
    const asked = retryDelayMs(response.headers, policy.nowMs()) ?? policy.minPauseMs;
    await throttle.pause(Math.min(policy.maxPauseMs, Math.max(policy.minPauseMs, asked)), key);
    if (attempt >= policy.maxRetries || !again) return response;
    // The refusal's body is not wanted: free its connection.
    await response.body?.cancel().catch(() => {});
  }
}
