import { type RedisStoreOptions, redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { startTestRedis } from './redis-server.js';

/**
 * A Redis of its own, stopped (SIGSTOP) before a store on it says its first word: the store never hears the
 * fleet, so it takes the fleet to be its `assumedNodes`, and every decision is its fail mode's until `resume()`.
 * `close()` resumes, closes the store and the client, and stops the server.
 */
export async function storeOnStoppedRedis(options: Omit<RedisStoreOptions, 'redis'>) {
  const server = await startTestRedis();
  server.process?.kill('SIGSTOP');
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  const store = redisStore({ redis, ...options });
  const resume = () => void server.process?.kill('SIGCONT');
  return {
    store,
    resume,
    close: async () => {
      resume();
      await store.close();
      redis.disconnect();
      await server.stop();
    },
  };
}
