/**
 * The access lists behind @sluice/grpc's interceptor, over real grpc-js on loopback: the peer's address is
 * what the lists match, whatever the key (a tenant's metadata, the peer), and a tenant id shaped like an
 * address is only a key.
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
  status,
} from '@grpc/grpc-js';
import { createLimiter, fixedWindow } from '@sluice/core';
import { type GrpcRateLimitOptions, byMetadata, grpcRateLimit } from '@sluice/grpc';
import { byIp } from '@sluice/core/http';
import { describe, expect, it } from 'vitest';
import { jsonMethod } from '../../examples/beyond-http/src/json-service.js';
import { closePeersAfterEach } from './peers.js';

const greeter: ServiceDefinition = { hello: jsonMethod('/test.Greeter/Hello') };
const GreeterClient = makeGenericClientConstructor(greeter, 'Greeter');

const { servers, clients } = closePeersAfterEach();

async function connect(options: GrpcRateLimitOptions): Promise<Client> {
  const server = new Server({ interceptors: [grpcRateLimit(options)] });
  server.addService(greeter, {
    hello: (_call: unknown, done: (e: null, r: unknown) => void) => done(null, { greeting: 'hello' }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  servers.push(server);
  const client = new GreeterClient(`127.0.0.1:${port}`, credentials.createInsecure());
  clients.push(client);
  return client;
}

/** The call's status code (OK: 0). */
function hello(client: Client, tenant: string): Promise<number> {
  const metadata = new Metadata();
  metadata.set('x-tenant', tenant);
  return new Promise((resolve) => {
    (client as unknown as { hello: (r: unknown, m: Metadata, cb: (e: ServiceError | null) => void) => void }).hello(
      {},
      metadata,
      (error) => resolve(error === null ? status.OK : error.code),
    );
  });
}

describe('access lists behind grpcRateLimit', () => {
  it("the peer's address is matched whatever the key; a tenant id shaped like an address is a key", async () => {
    const limiter = createLimiter({ rules: fixedWindow({ name: 'calls', limit: 2, windowMs: 60_000 }) });
    const byTenant = await connect({ limiter, key: byMetadata('x-tenant') });
    const byPeer = await connect({ limiter, key: byIp() });
    await limiter.allow('10.0.0.0/8');
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push(await hello(byTenant, '10.0.7.1'));
    expect(codes).toEqual([status.OK, status.OK, status.RESOURCE_EXHAUSTED, status.RESOURCE_EXHAUSTED]);
    await limiter.deny('127.0.0.1', { reason: 'this peer' });
    expect(await hello(byTenant, 'acme')).toBe(status.RESOURCE_EXHAUSTED);
    expect(await hello(byPeer, 'acme')).toBe(status.RESOURCE_EXHAUSTED);
    await limiter.unlist('127.0.0.1');
    await limiter.allow('127.0.0.0/8');
    for (let i = 0; i < 5; i++) expect(await hello(byTenant, 'acme')).toBe(status.OK);
    await limiter.close();
  });
});
