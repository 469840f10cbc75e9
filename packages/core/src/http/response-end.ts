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

/**
 * A Fetch `Response` settled when its body has been read to the end (completed) or cancelled (the client
 * went away); one without a body at once. A streamed body (server-sent events, an LLM's tokens) is passed
 * through as it comes, so a cost counted while streaming is known when `settle` runs.
 * @example
 * return settleAfterBody(await handler(request), settle) // settled when the body has been read
 */
export function settleAfterBody(response: Response, settle: SettleResponse<Response>): Response {
  const body = response.body;
  if (body === null) {
    settle(response, { status: response.status, completed: true });
    return response;
  }
  const reader = body.getReader();
  const passed = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          settle(response, { status: response.status, completed: true });
        } else controller.enqueue(value);
      } catch (error) {
        settle(response, { status: response.status, completed: false });
        controller.error(error);
      }
    },
    cancel(reason) {
      settle(response, { status: response.status, completed: false });
      return reader.cancel(reason);
    },
  });
  return new Response(passed, { status: response.status, statusText: response.statusText, headers: response.headers });
}
