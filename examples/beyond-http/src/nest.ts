/**
 * One Nest application whose guard limits a GraphQL resolver (Apollo) and a WebSocket gateway (platform-ws):
 * `quote` answers 3 queries a minute per client address, the gateway's `chat` 3 messages a minute per
 * connection. Prints the URL, then serves until stopped:
 *
 *   TSX_TSCONFIG_PATH=examples/beyond-http/tsconfig.json npx tsx examples/beyond-http/src/nest.ts
 *   curl -s localhost:$PORT/graphql -H 'content-type: application/json' -d '{"query":"{ quote }"}'
 */
import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { WsAdapter } from '@nestjs/platform-ws';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { fixedWindow } from '@sluice/core';
import { RateLimit, SluiceModule } from '@sluice/nestjs';

// No parameter decorators: tsx (esbuild) emits no design-type metadata for them to read.
@Resolver()
class PricesResolver {
  @Query(() => Number)
  @RateLimit({ algorithm: fixedWindow({ limit: 3, windowMs: 60_000, name: 'quotes' }) })
  quote(): number {
    return 30;
  }
}

@WebSocketGateway({ path: '/ws' })
class ChatGateway {
  @SubscribeMessage('chat')
  @RateLimit({ algorithm: fixedWindow({ limit: 3, windowMs: 60_000, name: 'chat' }) })
  chat(_client: unknown, text: string) {
    return { event: 'chat', data: `echo ${text}` };
  }
}

@Module({
  imports: [
    SluiceModule.forRoot({}),
    GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      context: ({ req, res }: { req: unknown; res: unknown }) => ({ req, res }),
    }),
  ],
  providers: [PricesResolver, ChatGateway],
})
class AppModule {}

const app = await NestFactory.create(AppModule, { logger: false });
app.useWebSocketAdapter(new WsAdapter(app));
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
console.log(
  `listening on ${(await app.getUrl()).replace('[::1]', '127.0.0.1')} (GraphQL at /graphql, WebSocket at /ws)`,
);
const stop = async () => {
  await app.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
