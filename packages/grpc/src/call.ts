import type { Metadata } from '@grpc/grpc-js';
import { SluiceRangeError } from '@sluice/core';
import type { RequestView } from '@sluice/core/http';

/**
 * One incoming gRPC call as sluice's key, cost, plan and skip functions see it: its method's full path
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
 * its text values joined with ', '), the peer as the address, `POST` and the method's path. The built-in
 * strategies (byIp) work on it.
 */
export function callView(call: GrpcCall): RequestView {
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

/**
 * A key from one metadata entry (a tenant id, an API key's id), prefixed with the entry's name; undefined
 * when the call has none (the adapter's `onMissingKey` decides). A value longer than `maxLength` is refused
 * as the call's bad input (INVALID_ARGUMENT), never cut to a key another client could share.
 * @example
 * grpcRateLimit({ limiter, key: byMetadata('x-tenant-id') })
 */
export function byMetadata(name: string, options: { maxLength?: number } = {}): (call: GrpcCall) => string | undefined {
  const maxLength = options.maxLength ?? DEFAULT_MAX_METADATA_KEY_LENGTH;
  const lower = name.toLowerCase();
  return (call) => {
    const value = call.metadata.get(lower).find((v): v is string => typeof v === 'string');
    if (value === undefined || value.length === 0) return undefined;
    if (value.length > maxLength) {
      throw new SluiceRangeError(
        `metadata ${lower}`,
        `${value.slice(0, 16)}...`,
        `metadata ${lower} is ${value.length} characters, more than the ${maxLength} a key may take`,
      );
    }
    return `${lower}:${value}`;
  };
}
