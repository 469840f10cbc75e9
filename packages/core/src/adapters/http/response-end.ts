import type { SettleResponse } from './after-response.js';

/** The part of node's ServerResponse that tells when a response is over (Express's, Connect's, Fastify's `reply.raw`, Koa's `ctx.res`). */
export interface NodeResponseEvents {
  readonly statusCode: number;
  readonly writableFinished?: boolean;
  /** Set once the connection closed (Node 18+), sent in full or not. */
  readonly closed?: boolean;
  /** Listens once to the response finishing or its connection closing. */
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

function hasEvents(value: unknown): value is NodeResponseEvents {
  return typeof (value as NodeResponseEvents | undefined)?.once === 'function';
}

/**
 * Settles `res` when node's response `raw` is over: 'finish' (sent in full) or 'close' before it (the
 * client went away: not completed). Settling twice is a no-op, so both may fire. A response object that
 * is not node's is settled at once with its status, as completed.
 * @example
 * settleOnNodeResponse(res, res, settle) // on 'finish', or 'close' before it
 */
export function settleOnNodeResponse<Res>(raw: unknown, res: Res, settle: SettleResponse<Res>): void {
  if (!hasEvents(raw)) {
    settle(res, { status: (raw as { statusCode?: number } | undefined)?.statusCode ?? 200, completed: true });
    return;
  }
  // Already over (a decision that took long, a client that left meanwhile): no event will come.
  if (raw.writableFinished === true || raw.closed === true) {
    settle(res, { status: raw.statusCode, completed: raw.writableFinished === true });
    return;
  }
  raw.once('finish', () => settle(res, { status: raw.statusCode, completed: true }));
  raw.once('close', () => settle(res, { status: raw.statusCode, completed: raw.writableFinished === true }));
}

/** What settleAfterBody reads of the request a response answers. */
export interface AnsweredRequest {
  /** HEAD: servers send no body and never read one. */
  readonly method: string;
  /** Aborted when the client goes away (Fetch runtimes abort `request.signal`): the body will never be read. */
  readonly signal?: AbortSignal | undefined;
}

/** Fetch's null body statuses: a response with one of these carries no body, so nothing will read one. */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

/**
 * The last way a body can end: the server dropped the Response without reading or cancelling its body (a
 * runtime that strips HEAD bodies itself, a handler's body it never sends). Collected, it settles as not
 * completed, so a concurrency slot never outlives the response that held it.
 */
const dropped =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry<() => void>((settleDropped) => settleDropped())
    : undefined;

/**
 * A Fetch `Response` settled when it is over, whichever way it ends: its body read to the end (completed),
 * cancelled or failed, the client gone (`request.signal`), or the Response dropped unread (not completed);
 * at once when no body will be sent: none, a HEAD request, a null body status (204, 304, ...). A streamed body
 * (server-sent events, an LLM's tokens) is passed through as it comes, so a cost counted while streaming is
 * known when `settle` runs. `settle` runs once.
 * @example
 * return settleAfterBody(await handler(request), settle, request) // settled when the body has been read
 */
export function settleAfterBody(
  response: Response,
  settle: SettleResponse<Response>,
  request: AnsweredRequest,
): Response {
  const body = response.body;
  if (body === null || request.method === 'HEAD' || NULL_BODY_STATUSES.has(response.status)) {
    settle(response, { status: response.status, completed: true });
    return response;
  }
  const token = {};
  const signal = request.signal;
  let over = false;
  const end = (completed: boolean): void => {
    if (over) return;
    over = true;
    dropped?.unregister(token);
    signal?.removeEventListener('abort', onGone);
    settle(response, { status: response.status, completed });
  };
  const reader = body.getReader();
  const onGone = (): void => {
    end(false);
    reader.cancel(signal?.reason).catch(() => {});
  };
  if (signal?.aborted === true) onGone();
  else signal?.addEventListener('abort', onGone, { once: true });
  const passed = passThrough(reader, end);
  dropped?.register(passed, () => end(false), token);
  return new Response(passed, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** `reader`'s chunks as a new stream, calling `end` when it is read to the end (true), fails or is cancelled (false). */
function passThrough(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  end: (completed: boolean) => void,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          end(true);
        } else controller.enqueue(value);
      } catch (error) {
        end(false);
        controller.error(error);
      }
    },
    cancel(reason) {
      end(false);
      return reader.cancel(reason);
    },
  });
}
