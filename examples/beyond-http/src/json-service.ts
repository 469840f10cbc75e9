import type { MethodDefinition } from '@grpc/grpc-js';

const serialize = (value: unknown) => Buffer.from(JSON.stringify(value));
const deserialize = (bytes: Buffer) => JSON.parse(bytes.toString()) as unknown;

/**
 * One gRPC method whose messages travel as JSON: what the example and the tests serve without a .proto file
 * (a real service would load its .proto).
 * @example
 * const service = { quote: jsonMethod('/shop.Prices/Quote') }
 */
export function jsonMethod(path: string, responseStream = false): MethodDefinition<unknown, unknown> {
  return {
    path,
    requestStream: false,
    responseStream,
    requestSerialize: serialize,
    requestDeserialize: deserialize,
    responseSerialize: serialize,
    responseDeserialize: deserialize,
  };
}
