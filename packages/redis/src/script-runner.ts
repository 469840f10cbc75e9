import type { Cluster, Redis } from 'ioredis';
import type { LuaScript } from './scripts.js';

/** The clients sluice runs on: a standalone ioredis client or an ioredis Cluster. */
export type RedisClient = Redis | Cluster;

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs a script by its sha1; when the server does not know it (a restart, a failover, SCRIPT FLUSH), sends
 * the source with EVAL, which also loads it, so the next call is an EVALSHA again. No call fails for it.
 */
export async function runScript(client: RedisClient, script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
  try {
    return await client.evalsha(script.sha1, keys.length, ...keys, ...args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return client.eval(script.source, keys.length, ...keys, ...args);
  }
}
