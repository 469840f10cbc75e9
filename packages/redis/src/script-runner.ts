import type { Cluster, Redis } from 'ioredis';
import type { LuaScript } from './scripts.js';

/** The clients sluice runs on: a standalone ioredis client or an ioredis Cluster. */
export type RedisClient = Redis | Cluster;

type Arg = string | Buffer;

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs a script by its sha1; when the server does not know it (a restart, a failover, SCRIPT FLUSH), sends
 * the source with EVAL, which also loads it, so the next call is an EVALSHA again. No call fails for it.
 * The reply comes back as a Buffer (the decide script answers in packed binary).
 */
export async function runScript(client: RedisClient, script: LuaScript, keys: readonly string[], args: readonly Arg[]): Promise<Buffer> {
  try {
    return (await client.callBuffer('EVALSHA', script.sha1, keys.length, ...keys, ...args)) as Buffer;
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return (await client.callBuffer('EVAL', script.source, keys.length, ...keys, ...args)) as Buffer;
  }
}
