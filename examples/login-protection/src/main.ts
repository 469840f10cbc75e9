/**
 * Starts the login service on PORT (3001; 0 for any free port): with REDIS_URL, failed logins are counted
 * on Redis (every node of a fleet sees every failure, and bans hold fleet-wide); without it, in memory.
 *
 *   node --conditions=sluice-source --import tsx examples/login-protection/src/main.ts
 *   curl -s -X POST localhost:3001/login -H 'content-type: application/json' -d '{"username":"alice","password":"nope"}' -i
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Store, memoryStore } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { loginApp } from './app.js';

const redisUrl = process.env.REDIS_URL;
const redis = redisUrl === undefined ? undefined : new Redis(redisUrl);
const store: Store = redis === undefined ? memoryStore() : redisStore({ redis });
const { app, limiter } = loginApp({ store });

const server = createServer(app);
server.listen(Number(process.env.PORT ?? 3001), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(
    `login service listening on http://127.0.0.1:${port} (${redis === undefined ? 'memory store' : `Redis at ${redisUrl}`})`,
  );
  console.log('5 failed logins per 15 min per user and address, then a 1 h ban; successful logins are free');
});

process.once('SIGTERM', () => {
  server.close(async () => {
    await limiter.close();
    await store.close();
    redis?.disconnect();
    process.exit(0);
  });
  server.closeAllConnections();
});
