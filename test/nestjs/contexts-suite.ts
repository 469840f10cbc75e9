/**
 * The Nest guard beyond HTTP routes, on real frameworks and clients, run on NestJS 12 (test/nestjs) and 11
 * (test/nest11, where vitest resolves every @nestjs/* package to that folder's Nest 11): GraphQL resolvers on
 * Apollo (Express) and Mercurius (Fastify), WebSocket gateways on platform-ws (a plain `ws` client) and
 * Socket.IO, microservice handlers over TCP and gRPC (a real @grpc/grpc-js client), and the start of an
 * application whose handlers would run unlimited in a context the module was not told about.
 */
import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Controller,
  type ExecutionContext,
  Get,
  HttpException,
  type INestApplication,
  Module,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Args, GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import {
  ClientProxyFactory,
  GrpcMethod,
  MessagePattern,
  Payload,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { WsAdapter } from '@nestjs/platform-ws';
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets';
import { type Decision, SluiceError, createLimiter, fixedWindow } from '@sluice/core';
import { pushbackMs } from '../../packages/grpc/src/trailers.js';
import { RateLimit, SluiceGuard, SluiceModule, type SluiceModuleOptions } from '@sluice/nestjs';
import {
  type ChannelCredentials,
  type Client,
  Metadata,
  type ServiceError,
  credentials,
  loadPackageDefinition,
  status,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { firstValueFrom, from } from 'rxjs';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import nestCore from '@nestjs/core/package.json' with { type: 'json' };
import nestGraphql from '@nestjs/graphql/package.json' with { type: 'json' };
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { unhandledDuring } from '../harness/unhandled.js';

const SUMS_PROTO = fileURLToPath(new URL('./fixtures/sums.proto', import.meta.url));

interface SumsClient extends Client {
  Sum(
    request: { values: number[] },
    metadata: Metadata,
    done: (error: ServiceError | null, reply?: { total: number }) => void,
  ): void;
  Count(request: { values: number[] }, metadata: Metadata): NodeJS.EventEmitter;
}

/** The suite on the NestJS major vitest resolves @nestjs/* to. */
export function contextsSuite(major: number): void {
  it(`runs on NestJS ${major} (@nestjs/graphql ${major + 2})`, () => {
    // Vitest resolves every @nestjs/* package from one folder (websockets and microservices export no package.json).
    expect(Number(nestCore.version.split('.')[0])).toBe(major);
    expect(Number(nestGraphql.version.split('.')[0])).toBe(major + 2);
  });

  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  let runs = 0;

  async function listen(module: object, platform: 'express' | 'fastify', setup?: (app: INestApplication) => void) {
    const app = await NestFactory.create(module, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
      logger: process.env.NEST_LOGS === '1' ? ['error', 'warn'] : false,
      abortOnError: false,
    });
    setup?.(app);
    apps.push(app);
    const port = await freePort();
    await app.listen(port, '127.0.0.1');
    return { app, port, url: `http://127.0.0.1:${port}` };
  }

  /** A resolver whose `hello` query allows two calls a minute per client address; `plain` has the module's limit. */
  function resolverModule(driver: 'apollo' | 'mercurius', per: 'resolver' | 'operation' = 'resolver') {
    const name = `gql${++runs}`;
    @Resolver()
    class HelloResolver {
      @Query(() => String)
      @RateLimit({ algorithm: fixedWindow({ limit: 2, windowMs: 60_000, name }) })
      hello(@Args('to', { type: () => String, nullable: true }) to?: string): string {
        return `hello ${to ?? 'you'}`;
      }

      @Query(() => String)
      other(): string {
        return 'other';
      }
    }
    const graphql =
      driver === 'apollo'
        ? GraphQLModule.forRoot<ApolloDriverConfig>({
            driver: ApolloDriver,
            autoSchemaFile: true,
            context: ({ req, res }: { req: unknown; res: unknown }) => ({ req, res }),
          })
        : GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true });
    @Module({
      imports: [
        SluiceModule.forRoot({
          algorithm: fixedWindow({ limit: 3, windowMs: 60_000, name: `${name}-module` }),
          graphqlPer: per,
        }),
        graphql,
      ],
      providers: [HelloResolver],
    })
    class GraphQLAppModule {}
    return GraphQLAppModule;
  }

  async function graphqlCall(url: string, query: string) {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    return {
      headers: response.headers,
      body: (await response.json()) as {
        data?: Record<string, string> | null;
        errors?: { message: string; extensions?: Record<string, unknown> }[];
      },
    };
  }

  describe('GraphQL resolvers', () => {
    it.each([
      ['apollo', 'express'],
      ['mercurius', 'fastify'],
    ] as const)(
      '%s on platform-%s: a resolver is limited per client, refused with a GraphQL error and the RateLimit headers',
      async (driver, platform) => {
        const { url } = await listen(resolverModule(driver), platform);
        const answers = [];
        for (let i = 0; i < 3; i++) answers.push(await graphqlCall(url, '{ hello(to: "ada") }'));
        expect(answers.slice(0, 2).map((a) => a.body.data?.hello)).toEqual(['hello ada', 'hello ada']);
        const refused = answers[2] as (typeof answers)[number];
        expect(refused.body.errors?.[0]?.extensions).toMatchObject({
          code: 'RATE_LIMITED',
          error: 'Too Many Requests',
          limit: 2,
          retryAfterSeconds: expect.any(Number),
        });
        // The window is aligned to the minute: the seconds left in it.
        const seconds = refused.body.errors?.[0]?.extensions?.retryAfterSeconds as number;
        expect(seconds).toBeGreaterThan(0);
        expect(refused.headers.get('ratelimit')).toMatch(new RegExp(`;r=0;t=${seconds}$`));
        expect(refused.headers.get('retry-after')).toBe(String(seconds));
        // The module's limit holds for the other query (3 a minute), counted apart.
        const others = [];
        for (let i = 0; i < 4; i++) others.push((await graphqlCall(url, '{ other }')).body);
        expect(others.map((o) => o.data?.other ?? o.errors?.[0]?.extensions?.code)).toEqual([
          'other',
          'other',
          'other',
          'RATE_LIMITED',
        ]);
      },
    );

    it("graphqlPer: 'operation': an operation of two limited fields is one decision", async () => {
      const { url } = await listen(resolverModule('apollo', 'operation'), 'express');
      const both = await graphqlCall(url, '{ a: hello(to: "a") b: hello(to: "b") }');
      expect(both.body.data).toEqual({ a: 'hello a', b: 'hello b' });
      expect((await graphqlCall(url, '{ hello }')).body.data?.hello).toBe('hello you');
      expect((await graphqlCall(url, '{ hello }')).body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    });
  });

  /** A gateway whose `chat` message allows two a minute per connection (the default key: connection and pattern). */
  function gatewayModule(options: { path?: string }) {
    const name = `ws${++runs}`;
    @WebSocketGateway(options)
    class ChatGateway {
      @RateLimit({ algorithm: fixedWindow({ limit: 2, windowMs: 60_000, name }) })
      @SubscribeMessage('chat')
      chat(@MessageBody() text: string) {
        return { event: 'chat', data: `echo ${text}` };
      }
    }
    @Module({ imports: [SluiceModule.forRoot({})], providers: [ChatGateway] })
    class GatewayModule {}
    return GatewayModule;
  }

  describe('WebSocket gateways', () => {
    it('platform-ws: each connection gets its own limit; a limited message gets the exception event, the connection stays', async () => {
      const { port } = await listen(gatewayModule({ path: '/ws' }), 'express', (app) =>
        app.useWebSocketAdapter(new WsAdapter(app)),
      );
      const connect = async () => {
        const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`);
        const messages: { event: string; data: unknown }[] = [];
        socket.on('message', (raw) => messages.push(JSON.parse(String(raw)) as { event: string; data: unknown }));
        await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
        return { socket, messages };
      };
      const a = await connect();
      for (const text of ['1', '2', '3']) a.socket.send(JSON.stringify({ event: 'chat', data: text }));
      await until(() => a.messages.length === 3);
      expect(a.messages.slice(0, 2)).toEqual([
        { event: 'chat', data: 'echo 1' },
        { event: 'chat', data: 'echo 2' },
      ]);
      expect(a.messages[2]).toMatchObject({
        event: 'exception',
        data: { status: 'error', code: 'RATE_LIMITED', limit: 2, retryAfterSeconds: expect.any(Number) },
      });
      const b = await connect();
      b.socket.send(JSON.stringify({ event: 'chat', data: 'b' }));
      await until(() => b.messages.length === 1);
      expect(b.messages[0]).toEqual({ event: 'chat', data: 'echo b' });
      expect(a.socket.readyState).toBe(WebSocket.OPEN);
      a.socket.close();
      b.socket.close();
    });

    it('Socket.IO: each socket gets its own limit; a limited message gets the exception event', async () => {
      const { url } = await listen(gatewayModule({}), 'express');
      const connect = async () => {
        const socket: Socket = io(url, { transports: ['websocket'] });
        const heard: [string, unknown][] = [];
        socket.onAny((event: string, data: unknown) => heard.push([event, data]));
        await new Promise((resolve, reject) => {
          socket.once('connect', () => resolve(undefined));
          socket.once('connect_error', reject);
        });
        return { socket, heard };
      };
      const a = await connect();
      for (const text of ['1', '2', '3']) a.socket.emit('chat', text);
      await until(() => a.heard.length === 3);
      // Socket.IO runs a socket's handlers as messages arrive, so answers may come in another order: two echoes
      // and one refusal.
      expect(a.heard.filter(([event]) => event === 'chat')).toHaveLength(2);
      expect(a.heard.filter(([event]) => event === 'exception')).toEqual([
        ['exception', expect.objectContaining({ status: 'error', code: 'RATE_LIMITED', limit: 2 })],
      ]);
      const b = await connect();
      b.socket.emit('chat', 'b');
      await until(() => b.heard.length === 1);
      expect(b.heard[0]).toEqual(['chat', 'echo b']);
      a.socket.disconnect();
      b.socket.disconnect();
    });
  });

  describe('a key function that throws', () => {
    it('a gateway message gets the exception event, a GraphQL call an error; nothing is left unhandled', async () => {
      const unhandled = await unhandledDuring(async () => {
        @WebSocketGateway({ path: '/throws' })
        class ThrowingGateway {
          @RateLimit({
            algorithm: fixedWindow({ limit: 2, windowMs: 60_000, name: `throws${++runs}` }),
            key: () => {
              throw new Error('no tenant on this message');
            },
          })
          @SubscribeMessage('chat')
          chat() {
            return { event: 'chat', data: 'never' };
          }
        }
        @Module({ imports: [SluiceModule.forRoot({})], providers: [ThrowingGateway] })
        class ThrowingModule {}
        const { port } = await listen(ThrowingModule, 'express', (app) => app.useWebSocketAdapter(new WsAdapter(app)));
        const socket = new WebSocket(`ws://127.0.0.1:${port}/throws`);
        const messages: { event: string; data: unknown }[] = [];
        socket.on('message', (raw) => messages.push(JSON.parse(String(raw)) as { event: string; data: unknown }));
        await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
        socket.send(JSON.stringify({ event: 'chat', data: 'x' }));
        await until(() => messages.length === 1);
        expect(messages[0]).toMatchObject({ event: 'exception', data: { status: 'error' } });
        expect(socket.readyState).toBe(WebSocket.OPEN);
        socket.close();
      });
      expect(unhandled).toEqual([]);
    });
  });

  describe('the guard twice on one call', () => {
    it('@UseGuards(SluiceGuard) on a controller beside the global guard: one decision per request', async () => {
      const limiter = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 60_000, name: `twice${++runs}` }) });
      @UseGuards(SluiceGuard)
      @Controller('twice')
      class TwiceController {
        @Get()
        get() {
          return { ok: true };
        }
      }
      @Module({ imports: [SluiceModule.forRoot({ limiter })], controllers: [TwiceController] })
      class TwiceModule {}
      const { url } = await listen(TwiceModule, 'express');
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${url}/twice`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      await limiter.close();
    });
  });

  describe('limitedError', () => {
    /**
     * A route and a gateway message, each allowing one call a minute; the module's limitedError shapes every
     * refusal, the gateway's own (on its @RateLimit) replaces it there.
     */
    function shapedModule(limitedError: unknown) {
      const name = `shaped${++runs}`;
      @Controller('report')
      class ReportController {
        @Get()
        @RateLimit({ algorithm: fixedWindow({ limit: 1, windowMs: 60_000, name: `${name}-http` }) })
        report() {
          return { ok: true };
        }
      }
      @WebSocketGateway({ path: '/shaped' })
      class ShapedGateway {
        @RateLimit({
          algorithm: fixedWindow({ limit: 1, windowMs: 60_000, name: `${name}-ws` }),
          limitedError: async (decision) => new WsException({ slowDown: decision.retryAfterMs > 0 }),
        })
        @SubscribeMessage('chat')
        chat() {
          return { event: 'chat', data: 'ok' };
        }
      }
      @Module({
        imports: [
          SluiceModule.forRoot({
            limitedError: limitedError as never,
          }),
        ],
        controllers: [ReportController],
        providers: [ShapedGateway],
      })
      class ShapedModule {}
      return ShapedModule;
    }

    it("shapes the refusal of a route and of a gateway message; a handler's own replaces the module's", async () => {
      const seen: [string, number][] = [];
      const module = shapedModule((decision: Decision, context: ExecutionContext) => {
        seen.push([context.getType(), decision.limit]);
        return new HttpException({ busy: true, retryInMs: decision.retryAfterMs }, 503);
      });
      const { port, url } = await listen(module, 'express', (app) => app.useWebSocketAdapter(new WsAdapter(app)));
      expect((await fetch(`${url}/report`)).status).toBe(200);
      const refused = await fetch(`${url}/report`);
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ busy: true, retryInMs: expect.any(Number) });
      // The RateLimit headers are still set on the shaped refusal.
      expect(refused.headers.get('ratelimit')).toMatch(/;r=0;t=\d+$/);
      expect(seen).toEqual([['http', 1]]);
      const socket = new WebSocket(`ws://127.0.0.1:${port}/shaped`);
      const messages: { event: string; data: unknown }[] = [];
      socket.on('message', (raw) => messages.push(JSON.parse(String(raw)) as { event: string; data: unknown }));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      for (const text of ['1', '2']) socket.send(JSON.stringify({ event: 'chat', data: text }));
      await until(() => messages.length === 2);
      // Each message is handled as it arrives, so the answers may come in either order.
      expect(messages).toHaveLength(2);
      expect(messages).toEqual(
        expect.arrayContaining([
          { event: 'chat', data: 'ok' },
          { event: 'exception', data: { slowDown: true } },
        ]),
      );
      // The module's limitedError was not asked for the gateway's refusal: the gateway's own shaped it.
      expect(seen).toEqual([['http', 1]]);
      socket.close();
    });

    it('one that is not a function is refused where it is given, naming limitedError', () => {
      expect(() => shapedModule('503')).toThrow(expect.objectContaining({ argument: 'limitedError' }));
      expect(() =>
        RateLimit({ algorithm: fixedWindow({ limit: 1, windowMs: 1_000 }), limitedError: 42 as never }),
      ).toThrow(expect.objectContaining({ argument: 'limitedError' }));
    });
  });

  describe('microservice handlers', () => {
    function mathModule(contexts: object | undefined, keyed: boolean) {
      const name = `rpc${++runs}`;
      @Controller()
      class MathController {
        @MessagePattern('sum')
        sum(@Payload() data: { tenant: string; values: number[] }) {
          return data.values.reduce((a, b) => a + b, 0);
        }
      }
      @Module({
        imports: [
          SluiceModule.forRoot({
            algorithm: fixedWindow({ limit: 2, windowMs: 60_000, name }),
            ...(keyed
              ? { key: (ctx: ExecutionContext) => `tenant:${ctx.switchToRpc().getData<{ tenant: string }>().tenant}` }
              : {}),
            ...(contexts === undefined ? {} : { contexts }),
          }),
        ],
        controllers: [MathController],
      })
      class MathModule {}
      return MathModule;
    }

    it('a limited handler in a context the module was not told about fails the start, naming it; declared, it starts', async () => {
      const app = await NestFactory.create(mathModule(undefined, false), new ExpressAdapter(), {
        logger: false,
        abortOnError: false,
      });
      const error = (await app.init().catch((e: unknown) => e)) as SluiceError;
      expect(error).toBeInstanceOf(SluiceError);
      expect(error.code).toBe('UNSUPPORTED');
      expect(error.message).toMatch(/would run unlimited: MathController\.sum \(rpc\)/);
      await app.close();
      const keyless = await NestFactory.create(mathModule({ rpc: 'limit' }, false), new ExpressAdapter(), {
        logger: false,
        abortOnError: false,
      });
      expect(String(await keyless.init().catch((e: unknown) => e))).toMatch(/MathController\.sum \(rpc, no key/);
      await keyless.close();
      const skipped = await NestFactory.create(mathModule({ rpc: 'skip' }, false), new ExpressAdapter(), {
        logger: false,
        abortOnError: false,
      });
      await skipped.init();
      await skipped.close();
      expect(() => SluiceModule.forRoot({ contexts: { rpc: 'sometimes' } as never })).toThrow(/contexts\.rpc/);
    });

    it("rpc: 'limit' with a key from the message: over TCP, each tenant's third call gets the error reply", async () => {
      const port = await freePort();
      const app = await NestFactory.create(mathModule({ rpc: 'limit' }, true), new ExpressAdapter(), {
        logger: false,
        abortOnError: false,
      });
      // inheritAppConfig: the microservice runs the application's global guard (Nest's own option).
      app.connectMicroservice(
        { transport: Transport.TCP, options: { host: '127.0.0.1', port } },
        { inheritAppConfig: true },
      );
      apps.push(app);
      await app.startAllMicroservices();
      await app.init();
      const client: ClientProxy = ClientProxyFactory.create({
        transport: Transport.TCP,
        options: { host: '127.0.0.1', port },
      });
      const sum = (tenant: string) =>
        firstValueFrom(client.send<number>('sum', { tenant, values: [1, 2, 3] })).catch((e: unknown) => e);
      expect([await sum('a'), await sum('a')]).toEqual([6, 6]);
      expect(await sum('a')).toMatchObject({ status: 'error', code: 'RATE_LIMITED', limit: 2 });
      expect(await sum('b')).toBe(6);
      client.close();
    });

    /** A Nest gRPC microservice whose Sums.Sum allows two calls a minute per `x-tenant` metadata entry. */
    async function grpcService(options?: SluiceModuleOptions) {
      const name = `grpc${++runs}`;
      @Controller()
      class SumsController {
        @GrpcMethod('Sums', 'Sum')
        sum(data: { values?: number[] }) {
          return { total: (data.values ?? []).reduce((a, b) => a + b, 0) };
        }

        @GrpcMethod('Sums', 'Count')
        count(data: { values?: number[] }) {
          return from((data.values ?? []).map((_, i) => ({ total: i + 1 })));
        }
      }
      @Module({
        imports: [
          SluiceModule.forRoot(
            options ?? {
              algorithm: fixedWindow({ limit: 2, windowMs: 60_000, name }),
              key: (ctx: ExecutionContext) => ctx.switchToRpc().getContext<Metadata>().get('x-tenant')[0] as string,
              onMissingKey: 'reject',
              contexts: { rpc: 'limit' },
            },
          ),
        ],
        controllers: [SumsController],
      })
      class SumsModule {}
      const url = `127.0.0.1:${await freePort()}`;
      const app = await NestFactory.create(SumsModule, new ExpressAdapter(), { logger: false, abortOnError: false });
      app.connectMicroservice(
        { transport: Transport.GRPC, options: { package: 'limited', protoPath: SUMS_PROTO, url } },
        { inheritAppConfig: true },
      );
      apps.push(app);
      await app.startAllMicroservices();
      await app.init();
      const { limited } = loadPackageDefinition(loadSync(SUMS_PROTO)) as unknown as {
        limited: { Sums: new (address: string, creds: ChannelCredentials) => SumsClient };
      };
      const client = new limited.Sums(url, credentials.createInsecure());
      const sum = (tenant: string | undefined) =>
        new Promise<{ total?: number | undefined; error?: ServiceError }>((resolve) => {
          const metadata = new Metadata();
          if (tenant !== undefined) metadata.set('x-tenant', tenant);
          client.Sum({ values: [1, 2, 3] }, metadata, (error, reply) =>
            resolve(error ? { error } : { total: reply?.total }),
          );
        });
      const count = (tenant: string) =>
        new Promise<{ totals: number[]; error?: ServiceError }>((resolve) => {
          const metadata = new Metadata();
          metadata.set('x-tenant', tenant);
          const totals: number[] = [];
          const stream = client.Count({ values: [5, 5, 5] }, metadata);
          stream.on('data', (reply: { total: number }) => totals.push(reply.total));
          stream.on('error', (error: ServiceError) => resolve({ totals, error }));
          stream.on('end', () => resolve({ totals }));
        });
      return { client, sum, count };
    }

    it('a gRPC microservice: a refused unary or streaming call is RESOURCE_EXHAUSTED with the trailers grpcRateLimit sends', async () => {
      const { client, sum, count } = await grpcService();
      expect([(await sum('a')).total, (await sum('a')).total]).toEqual([6, 6]);
      const refused = (await sum('a')).error as ServiceError;
      expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(refused.details).toMatch(/^Too Many Requests: rule grpc\d+ \(limit 2\), retry after \d+ s$/);
      const retryAfter = Number(refused.metadata.get('retry-after')[0]);
      expect(retryAfter).toBeGreaterThan(0);
      expect(refused.metadata.get('ratelimit')[0]).toMatch(new RegExp(`;r=0;t=${retryAfter}$`));
      // What grpcRetryOnLimit (and gRPC's own retry policy) waits for.
      expect(pushbackMs(refused.metadata)).toBeGreaterThan(0);
      expect(pushbackMs(refused.metadata)).toBeLessThanOrEqual(retryAfter * 1000);
      expect((await sum('b')).total).toBe(6);
      // A call with no key (onMissingKey 'reject') is the client's bad input: INVALID_ARGUMENT, nothing taken.
      const keyless = (await sum(undefined)).error as ServiceError;
      expect(keyless.code).toBe(status.INVALID_ARGUMENT);
      // A server-streaming method is refused the same way, before it writes anything.
      expect((await count('c')).totals).toEqual([1, 2, 3]);
      expect((await count('c')).totals).toEqual([1, 2, 3]);
      const stream = await count('c');
      expect(stream.totals).toEqual([]);
      expect(stream.error?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(pushbackMs(stream.error?.metadata)).toBeGreaterThan(0);
      client.close();
    });

    it('a gRPC microservice with no key: keyed by the peer, whose address the access lists match', async () => {
      const limiter = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60_000, name: `peer${++runs}` }) });
      const { client, sum } = await grpcService({ limiter, contexts: { rpc: 'limit' } });
      // Two tenants, one peer: its third call is refused, whatever the tenant.
      expect([(await sum('a')).total, (await sum('b')).total]).toEqual([6, 6]);
      expect((await sum('c')).error?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect((await limiter.peek('ip:127.0.0.1')).remaining).toBe(0);
      await limiter.allow('127.0.0.1');
      expect((await sum('d')).total).toBe(6);
      await limiter.unlist('127.0.0.1');
      await limiter.deny('127.0.0.0/8');
      expect((await sum('e')).error?.code).toBe(status.RESOURCE_EXHAUSTED);
      client.close();
      await limiter.close();
    });
  });
}

/** Resolves once `done()` holds (checked on each turn of the event loop; bounded at 5 s). */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('not within 5 s');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
