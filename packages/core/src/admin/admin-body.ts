import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';

/** The largest request body the admin router reads (a list change of 10,000 long entries fits). */
export const MAX_ADMIN_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The request's JSON body as an object (an empty body: {}), read at most MAX_ADMIN_BODY_BYTES: a longer one
 * is refused as it streams in, never read whole. Called only once authorize said yes.
 */
export async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > MAX_ADMIN_BODY_BYTES) throw tooLong(declared);
  if (request.bodyUsed)
    throw new SluiceTypeError(
      'body',
      undefined,
      'the request body was read before the admin router (a body parser in front of it): mount the router ' +
        'before the parser, or leave the parser out of its routes',
    );
  if (request.body === null) return {};
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > MAX_ADMIN_BODY_BYTES) {
      await reader.cancel();
      throw tooLong(length);
    }
    chunks.push(value);
  }
  const text = new TextDecoder().decode(concat(chunks, length));
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SluiceTypeError('body', text.slice(0, 40), 'the request body must be JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new SluiceTypeError('body', parsed, `the request body must be a JSON object, got ${describe(parsed)}`);
  return parsed as Record<string, unknown>;
}

/** A body past MAX_ADMIN_BODY_BYTES: the router answers it 413. */
export class BodyTooLarge extends SluiceRangeError {}

const tooLong = (bytes: number) =>
  new BodyTooLarge('body', bytes, `the request body may be at most ${MAX_ADMIN_BODY_BYTES} bytes, got ${bytes}`);

function concat(chunks: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
