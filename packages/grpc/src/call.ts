import type { Metadata } from '@grpc/grpc-js';
import { SluiceRangeError, SluiceTypeError } from '@sluice/core';
import type { RequestView } from '@sluice/core/http';
import { type SchemaOf, describeValue, inCall, option, parseOptions, positiveInteger } from '@sluice/core/internal';

/**
 * One incoming gRPC call as sluice's key, permits, plan and skip functions see it: its method's full path
 * (`/package.Service/Method`), its request metadata, and the peer's address.
 */
export interface GrpcCall {
  /** `/package.Service/Method`. */
  readonly method: string;
  readonly metadata: Metadata;
  /** The connection's remote address (no port); undefined when grpc-js does not know it. */
  readonly peerAddress: string | undefined;
  /** Whether the client streams requests, the server responses (unary: both false). */
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

/**
 * A gRPC call read as every sluice adapter reads a request: metadata as headers (a binary or repeated entry:
 * its text values joined with ', '), the peer as the address (what the access lists match), `POST` and the
 * method's path. The built-in strategies (byIp) work on it; the Nest guard reads a gRPC microservice's calls
 * with it.
 * @example
 * const view = callView({ method: '/search.Search/Query', metadata, peerAddress: '203.0.113.7' })
 * view.header('x-tenant-id') // the entry's values, joined with ', '
 */
export function callView(call: Pick<GrpcCall, 'method' | 'metadata' | 'peerAddress'>): RequestView {
  return {
    header: (name) => {
      const values = call.metadata.get(name).filter((v): v is string => typeof v === 'string');
      return values.length === 0 ? undefined : values.join(', ');
    },
    peerAddress: call.peerAddress,
    method: 'POST',
    path: call.method,
  };
}

/** The longest metadata value byMetadata takes as a key unless told otherwise. */
export const DEFAULT_MAX_METADATA_KEY_LENGTH = 256;

/** Options of `byMetadata`. */
interface ByMetadataOptions {
  /**
   * Longest value taken as a key; a longer one is refused as the call's bad input (INVALID_ARGUMENT).
   * @default 256
   */
  maxKeyLength?: number;
}

/** byMetadata's options. Exported for docs/options.md only (scripts/render-options.ts); no entry point exports it. */
export const BY_METADATA_OPTIONS = {
  maxKeyLength: option(positiveInteger, DEFAULT_MAX_METADATA_KEY_LENGTH),
} as const satisfies SchemaOf<ByMetadataOptions>;

/**
 * A key from one metadata entry (a tenant id, an API key's id), prefixed with the entry's name; undefined
 * when the call has none (the adapter's `onMissingKey` decides). A value longer than `maxKeyLength` is refused
 * as the call's bad input (INVALID_ARGUMENT), never cut to a key another client could share.
 *
 * An entry given several times is keyed by its LAST value: the one the nearest hop added. A proxy of yours
 * that appends the entry (Envoy's `request_headers_to_add`, say) puts its value after any the client sent,
 * so a client cannot pick its bucket by sending the entry first. HTTP/2 joins repeated entries with ', ' on
 * the way in, so a value is read as a comma-separated list (`forged, acme` is `acme`'s call, as byIp reads
 * x-forwarded-for from the right); a value must not contain a comma of its own. Without a proxy of yours
 * setting the entry the client chooses its key whatever sluice reads: key by something your service
 * authenticates.
 * @example
 * grpcRateLimit({ limiter, key: byMetadata('x-tenant-id') })
 */
export function byMetadata(name: string, options: ByMetadataOptions = {}): (call: GrpcCall) => string | undefined {
  const { maxKeyLength } = inCall('byMetadata', () => {
    if (typeof name !== 'string' || name.length === 0) {
      throw new SluiceTypeError('name', name, `byMetadata needs a metadata entry's name, got ${describeValue(name)}`);
    }
    return parseOptions('byMetadata options', BY_METADATA_OPTIONS, options, false);
  });
  const lower = name.toLowerCase();
  return (call) => {
    const value = lastValue(call.metadata.get(lower));
    if (value === undefined || value.length === 0) return undefined;
    if (value.length > maxKeyLength) {
      throw new SluiceRangeError(
        `metadata ${lower}`,
        `${value.slice(0, 16)}...`,
        `metadata ${lower} is ${value.length} characters, more than the ${maxKeyLength} a key may take`,
      );
    }
    return `${lower}:${value}`;
  };
}

/** The last of an entry's text values, each read as a comma-separated list (as HTTP/2 joins repeats). */
function lastValue(values: readonly (string | Buffer)[]): string | undefined {
  for (let i = values.length - 1; i >= 0; i--) {
    const value = values[i];
    if (typeof value === 'string') return value.slice(value.lastIndexOf(',') + 1).trim();
  }
  return undefined;
}
