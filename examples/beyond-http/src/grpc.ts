/**
 * A gRPC service limited per tenant (a bucket of 3 calls, refilled with 3 per 5 s, from the `x-tenant`
 * metadata) and a client that waits out its refusals: tenant "acme" makes 5 calls at once through
 * grpcRetryOnLimit (the first 3 answered at once, the other 2 after the server's pushback, a refill each), tenant "solo" makes 1, and a client without the interceptor sees
 * the refusal itself. Prints each answer with its time, then exits.
 *
 *   npx tsx examples/beyond-http/src/grpc.ts
 */
import {
  type Client,
  Metadata,
  Server,
  ServerCredentials,
  type ServiceDefinition,
  type ServiceError,
  credentials,
  makeGenericClientConstructor,
} from '@grpc/grpc-js';
import { createLimiter, tokenBucket } from '@sluice/core';
import { byMetadata, grpcRateLimit, grpcRetryOnLimit } from '@sluice/grpc';
import { jsonMethod } from './json-service.js';

const service: ServiceDefinition = { quote: jsonMethod('/shop.Prices/Quote') };

// A bucket rather than a fixed window: the pushback is a refill's time wherever the run starts in the clock.
const limiter = createLimiter({ rules: tokenBucket({ capacity: 3, refillPerSecond: 0.6, name: 'quotes' }) });
const server = new Server({ interceptors: [grpcRateLimit({ limiter, key: byMetadata('x-tenant') })] });
server.addService(service, {
  quote: (call: { request: { item: string } }, done: (error: null, reply: { price: number }) => void) =>
    done(null, { price: call.request.item.length * 10 }),
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);
console.log(`gRPC server on 127.0.0.1:${port}: 3 quotes per tenant at once, then 3 per 5 s`);

const Prices = makeGenericClientConstructor(service, 'Prices');
const started = Date.now();
const quote = (client: Client, tenant: string, item: string) =>
  new Promise<string>((resolve) => {
    const metadata = new Metadata();
    metadata.set('x-tenant', tenant);
    (client as unknown as Record<string, (...args: unknown[]) => void>).quote?.(
      { item },
      metadata,
      (error: ServiceError | null, reply?: { price: number }) => {
        const at = ((Date.now() - started) / 1000).toFixed(1);
        resolve(
          error
            ? `${at} s  ${tenant} ${item}: ${error.code} ${error.details} (retry-after ${error.metadata.get('retry-after')[0]} s)`
            : `${at} s  ${tenant} ${item}: ${reply?.price}`,
        );
      },
    );
  });

const patient = new Prices(`127.0.0.1:${port}`, credentials.createInsecure(), {
  interceptors: [grpcRetryOnLimit({ maxWaitMs: 15_000 })],
});
const impatient = new Prices(`127.0.0.1:${port}`, credentials.createInsecure());
const lines = await Promise.all([
  ...['apple', 'pear', 'fig', 'plum', 'kiwi'].map((item) => quote(patient, 'acme', item)),
  quote(patient, 'solo', 'lime'),
]);
for (const line of lines) console.log(line);
console.log(await quote(impatient, 'solo', 'date'), '<- the same again, one more');
for (let i = 0; i < 2; i++) await quote(impatient, 'solo', 'date');
console.log(await quote(impatient, 'solo', 'date'), '<- refused: no interceptor to wait');
patient.close();
impatient.close();
await limiter.close();
await new Promise((resolve) => server.tryShutdown(resolve));
