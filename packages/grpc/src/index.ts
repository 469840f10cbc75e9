/**
 * @sluice/grpc: sluice rate limits for gRPC services on @grpc/grpc-js. `grpcRateLimit` is a server interceptor
 * (per method, metadata and peer; RESOURCE_EXHAUSTED with retry pushback and the RateLimit fields), and
 * `grpcRetryOnLimit` a client interceptor that waits out a refusal and sends the call again. The peer-address
 * key, `byIp()`, is imported from `@sluice/core/http` (its one home), as every adapter's.
 */
export { grpcRateLimit } from './server-interceptor.js';
export type { GrpcRateLimitOptions } from './server-interceptor.js';
export { grpcRetryOnLimit } from './client-interceptor.js';
export type { GrpcRetryOptions } from './client-interceptor.js';
export { byMetadata } from './call.js';
// @sluice/nestjs loads these by name (an optional peer) to read and refuse a gRPC microservice call as
// grpcRateLimit does: internal, they leave with an internal subpath for the adapters.
export { callView } from './call.js';
export { refusalStatus } from './trailers.js';
export type { GrpcCall } from './call.js';
