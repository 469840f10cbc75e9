import { SluiceRangeError, SluiceTypeError } from '@sluice/core';
import type { HttpRequestLike, LimitedBody, RequestView } from '@sluice/core/http';
import { describeValue, type Verdict, limitedBody, nodeRequestView, type RejectedBody } from '@sluice/core/internal';
import { type ExecutionContext, IntrinsicException } from '@nestjs/common';

/** The kinds of handler a Nest application runs: HTTP routes, GraphQL resolvers, WebSocket gateways, microservices. */
export type SluiceContextType = 'http' | 'graphql' | 'ws' | 'rpc';

/** What the guard does with one kind of handler: limits it, or lets it through unlimited because you said so. */
export type ContextPolicy = 'limit' | 'skip';

/**
 * Which kinds of handler the guard limits (see SluiceModuleOptions.contexts). HTTP routes, GraphQL resolvers
 * and WebSocket gateways are limited unless set to 'skip'; microservice handlers are limited only when set
 * to 'limit', with a `key` that reads the message (a gRPC method's calls are keyed by their peer's address
 * when no key is given), and an application with a limited microservice handler and neither declared fails
 * at start-up.
 */
export interface SluiceContexts {
  /** @default 'limit' */
  http?: ContextPolicy;
  /** @default 'limit' */
  graphql?: ContextPolicy;
  /** @default 'limit' */
  ws?: ContextPolicy;
  /** @default undeclared: a limited microservice handler fails the start */
  rpc?: ContextPolicy;
}

const DEFAULT_CONTEXTS: Readonly<Record<SluiceContextType, ContextPolicy | undefined>> = {
  http: 'limit',
  graphql: 'limit',
  ws: 'limit',
  rpc: undefined,
};

/** The module's `contexts`, checked, with the defaults filled in. */
export function contextPolicies(value: unknown): Readonly<Record<string, ContextPolicy | undefined>> {
  if (value === undefined) return DEFAULT_CONTEXTS;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceTypeError(
      'contexts',
      value,
      `contexts must be an object such as { rpc: 'skip' }, got ${describeValue(value)}`,
    );
  }
  const policies: Record<string, ContextPolicy | undefined> = { ...DEFAULT_CONTEXTS };
  for (const [type, policy] of Object.entries(value)) {
    if (policy !== 'limit' && policy !== 'skip') {
      throw new SluiceRangeError(
        `contexts.${type}`,
        policy,
        `contexts.${type} must be 'limit' or 'skip', got ${describeValue(policy)}`,
      );
    }
    policies[type] = policy;
  }
  return policies;
}

/** Metadata Nest's packages put on handlers, by string (so none of them is needed to read it). */
const RESOLVER_TYPE = 'graphql:resolver_type';
const GATEWAY = 'websockets:is_gateway';
const MESSAGE_MAPPING = 'websockets:message_mapping';
const PATTERN = 'microservices:pattern';
const TRANSPORT = 'microservices:transport';
/** `Transport.GRPC` of @nestjs/microservices (11 and 12). */
const GRPC_TRANSPORT = 4;

/**
 * The kind of handler a class's method is, from its metadata: a microservice pattern, a GraphQL resolver's
 * field, a gateway's message, else an HTTP route (a controller's). Undefined for a provider's plain method.
 */
export function handlerType(
  type: object,
  handler: object,
  isController: boolean,
  metadata: (key: string, target: object) => unknown,
): SluiceContextType | undefined {
  if (metadata(PATTERN, handler) !== undefined) return 'rpc';
  if (metadata(RESOLVER_TYPE, handler) !== undefined) return 'graphql';
  if (metadata(GATEWAY, type) === true && metadata(MESSAGE_MAPPING, handler) === true) return 'ws';
  return isController ? 'http' : undefined;
}

/** A gRPC method's handler (`@GrpcMethod`, `@GrpcStreamMethod`): a pattern served by Nest's gRPC transport. */
export function isGrpcHandler(handler: object, metadata: (key: string, target: object) => unknown): boolean {
  return metadata(PATTERN, handler) !== undefined && metadata(TRANSPORT, handler) === GRPC_TRANSPORT;
}

/** A context type Nest gives at run time, as the guard names it (a custom transport's own name kept). */
export function typeOf(context: ExecutionContext): string {
  return context.getType<string>();
}

/** The GraphQL context object of a resolver call (its third argument): where the request and response are. */
function graphqlContext(context: ExecutionContext): Record<string, unknown> {
  const value = context.getArgByIndex<unknown>(2);
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

/**
 * The request and response of a GraphQL call: Apollo's `{ req, res }` (Express), Mercurius's `{ reply }`
 * (Fastify: `reply.request`), or a context of your own holding `req`.
 */
export function graphqlHttp(context: ExecutionContext): { req: unknown; res: unknown } {
  const g = graphqlContext(context);
  const reply = g.reply as { request?: unknown } | undefined;
  return { req: g.req ?? g.request ?? reply?.request, res: g.res ?? reply };
}

/** An id per WebSocket connection that has none of its own (the `ws` package's sockets). */
const connectionIds = new WeakMap<object, string>();
let connections = 0;

/** A WebSocket client as Socket.IO and `ws` give it. */
interface WsClient {
  readonly id?: unknown;
  readonly handshake?: { readonly address?: string; readonly headers?: Record<string, string | string[] | undefined> };
  readonly conn?: { readonly remoteAddress?: string };
  readonly _socket?: { readonly remoteAddress?: string };
}

/** The connection's own id: Socket.IO's socket id, or one sluice gives a `ws` socket. */
export function connectionId(client: unknown): string {
  const c = client as WsClient;
  if (typeof c?.id === 'string') return c.id;
  if (typeof client !== 'object' || client === null) return 'unknown';
  let id = connectionIds.get(client);
  if (id === undefined) {
    id = `ws-${++connections}`;
    connectionIds.set(client, id);
  }
  return id;
}

/**
 * What sluice reads from a call of each kind: an HTTP or GraphQL request as every adapter reads it, a
 * WebSocket message as its connection (Socket.IO's handshake headers and address, a `ws` socket's peer)
 * with the message pattern as its path, a microservice message as its pattern alone.
 */
export function viewOf(type: string, context: ExecutionContext): RequestView {
  if (type === 'http') {
    const http = context.switchToHttp();
    const response = http.getResponse<{ raw?: unknown }>();
    return nodeRequestView(http.getRequest<HttpRequestLike>(), response.raw ?? response);
  }
  if (type === 'graphql') {
    const { req, res } = graphqlHttp(context);
    if (typeof req === 'object' && req !== null) {
      const raw = (req as { raw?: unknown }).raw;
      return nodeRequestView((raw ?? req) as HttpRequestLike, (res as { raw?: unknown } | undefined)?.raw ?? res);
    }
    return bareView('POST', 'graphql');
  }
  if (type === 'ws') {
    const ws = context.switchToWs();
    const client = ws.getClient<WsClient>();
    const headers = client?.handshake?.headers ?? {};
    const peer = client?.handshake?.address ?? client?.conn?.remoteAddress ?? client?._socket?.remoteAddress;
    return {
      header: (name) => {
        const value = headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      },
      peerAddress: peer,
      method: 'MESSAGE',
      path: String(ws.getPattern?.() ?? ''),
    };
  }
  return bareView(
    'MESSAGE',
    String(context.switchToRpc().getContext<{ getPattern?: () => unknown }>()?.getPattern?.() ?? ''),
  );
}

function bareView(method: string, path: string): RequestView {
  return { header: () => undefined, peerAddress: undefined, method, path };
}

/** The key of a WebSocket message when you give none: its connection and its message pattern. */
export function wsDefaultKey(context: ExecutionContext): string {
  const ws = context.switchToWs();
  return `ws:${connectionId(ws.getClient())}:${String(ws.getPattern?.() ?? '')}`;
}

type Loaded = Record<string, unknown>;
const loaded = new Map<string, Promise<Loaded>>();
/** One of Nest's optional packages, loaded the first time a call of its kind is refused (it is there: it made the call). */
export function load(name: string): Promise<Loaded> {
  let module = loaded.get(name);
  if (module === undefined) {
    module = import(name) as Promise<Loaded>;
    loaded.set(name, module);
  }
  return module;
}

/**
 * A GraphQL call refused by the guard. graphql-js carries an error's `extensions` into the response's
 * `errors[]` (`extensions.code`: 'RATE_LIMITED' or 'BAD_REQUEST', with the body every sluice adapter sends),
 * and Nest does not log it as a failure (an IntrinsicException, like an HttpException).
 * @example
 * ```ts
 * // { "errors": [{ "message": "Too Many Requests", "extensions": { "code": "RATE_LIMITED", "retryAfterSeconds": 42, ... } }] }
 * ```
 */
export class GraphQLRefusal extends IntrinsicException {
  override readonly name = 'GraphQLRefusal';
  constructor(
    message: string,
    readonly extensions: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

/** A verdict the guard refuses a call for. */
type Refused = Extract<Verdict<unknown>, { kind: 'limited' | 'rejected' | 'abandoned' }>;

/** What a call that went away while it waited is told (it is not there to hear it). */
const ABANDONED: RejectedBody = {
  error: 'Bad Request',
  message: 'the client went away while the call waited for its rate limit',
};

/**
 * The error that refuses a call of `type` where its framework answers it: a WsException (the gateway's
 * `exception` event), an RpcException (the microservice's error reply; on a gRPC microservice, the status
 * grpcRateLimit sends: RESOURCE_EXHAUSTED with retry-after and grpc-retry-pushback-ms), a GraphQLRefusal (in
 * the response's `errors`, with `extensions.code`); HTTP's is the guard's own HttpException.
 */
export async function refusal(type: string, verdict: Refused, context: ExecutionContext): Promise<Error> {
  const code = verdict.kind === 'limited' ? 'RATE_LIMITED' : 'BAD_REQUEST';
  const body: RejectedBody | LimitedBody =
    verdict.kind === 'limited' ? limitedBody(verdict.decision) : verdict.kind === 'rejected' ? verdict.body : ABANDONED;
  if (type === 'ws') {
    const { WsException } = (await load('@nestjs/websockets')) as { WsException: new (error: object) => Error };
    return new WsException({ status: 'error', code, ...body });
  }
  if (type === 'rpc') {
    const { RpcException } = (await load('@nestjs/microservices')) as { RpcException: new (error: object) => Error };
    if (!isGrpcCall(context)) return new RpcException({ status: 'error', code, ...body });
    // grpc-js answers an error with a numeric `code` by that status, its `details` and `metadata` trailers.
    const { refusalStatus } = (await load('@sluice/grpc')) as {
      refusalStatus: (verdict: Refused) => { code: number; details: string; metadata: unknown };
    };
    const status = refusalStatus(verdict);
    return new RpcException({ ...status, message: status.details });
  }
  return new GraphQLRefusal('message' in body ? body.message : body.error, { code, ...body });
}

/** A gRPC microservice's call: Nest passes (request, metadata, call), the metadata as the RPC context. */
function isGrpcCall(context: ExecutionContext): boolean {
  const metadata = context.switchToRpc().getContext<{ getMap?: unknown; toHttp2Headers?: unknown } | undefined>();
  return typeof metadata?.getMap === 'function' && typeof metadata.toHttp2Headers === 'function';
}

/** The part of grpc-js's server call a view reads. */
interface GrpcServerCall {
  getPeer?(): string;
  getPath?(): string;
}

/**
 * What sluice reads from a microservice call: a gRPC call as @sluice/grpc's interceptor reads one (metadata
 * as headers, the peer's address for byIp and the access lists, the method's path), any other message as
 * its pattern alone.
 */
export async function rpcView(context: ExecutionContext): Promise<RequestView> {
  if (!isGrpcCall(context)) return viewOf('rpc', context);
  const { callView } = (await load('@sluice/grpc')) as { callView: (call: object) => RequestView };
  const call = context.getArgByIndex<GrpcServerCall | undefined>(2);
  // grpc-js gives the peer as `${remoteAddress}:${remotePort}` (an IPv6 address unbracketed).
  const peer = /^(.+):\d+$/.exec(call?.getPeer?.() ?? '')?.[1];
  return callView({
    method: call?.getPath?.() ?? viewOf('rpc', context).path,
    metadata: context.switchToRpc().getContext(),
    peerAddress: peer,
  });
}
