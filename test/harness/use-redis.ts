import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startTestRedis, type TestRedis } from './redis-server.js';

/**
 * Starts a test Redis and one client before a suite's tests and stops both after. Returns a getter (the
 * values exist only once beforeAll has run).
 */
export function useTestRedis(): () => { server: TestRedis; redis: Redis } {
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startTestRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  return () => {
    if (server === undefined || redis === undefined) throw new Error('useTestRedis: used before its beforeAll ran');
    return { server, redis };
  };
}
