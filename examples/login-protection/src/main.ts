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
import { DEMO_LOGIN, loginApp } from './app.js';

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
  const login = (password: string) =>
    `curl -s -i -X POST http://127.0.0.1:${port}/login -H 'content-type: application/json' ` +
    `-d '{"username":"${DEMO_LOGIN.username}","password":"${password}"}'`;
  console.log('Try it:');
  console.log(`  ${login(DEMO_LOGIN.password)}    # 200: a correct password is free`);
  console.log(`  for i in 1 2 3 4 5 6; do ${login('nope')} | head -1; done    # 401 x5, then 429: banned`);
  console.log(`  ${login(DEMO_LOGIN.password)}    # 429 with Retry-After: the ban holds even for the right password`);
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
