import type { Client, Server } from '@grpc/grpc-js';
import { afterEach } from 'vitest';

/**
 * The gRPC servers and clients a test makes, closed after each test (clients first, then the servers shut
 * down gracefully): push each one as it is made.
 */
export function closePeersAfterEach(): { readonly servers: Server[]; readonly clients: Client[] } {
  const servers: Server[] = [];
  const clients: Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.tryShutdown(resolve))));
  });
  return { servers, clients };
}
