import type { RedisConnection, ScriptReply } from './connection/connection.js';
import { type RedisClient, toConnection } from './connection/connect.js';
import type { LuaScript } from './scripts.js';

export type { RedisClient } from './connection/connect.js';

function isConnection(value: RedisClient | RedisConnection): value is RedisConnection {
  return (
    typeof (value as RedisConnection).runScript === 'function' && typeof (value as RedisConnection).watch === 'function'
  );
}

/**
 * Runs a script on any supported client (or a connection made from one): FCALL once its function library
 * is loaded, EVALSHA before that (and where the server has no functions), and on NOSCRIPT (a restart, a
 * failover, SCRIPT FLUSH) the source, which also loads it, so no call fails for it. Bulk replies come back
 * as Buffers (the decide script answers in packed binary).
 * @example
 * const reply = await runScript(redis, decideScript(['fixedWindow']), keys, args)
 */
export function runScript(
  client: RedisClient | RedisConnection,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | Buffer)[],
): Promise<ScriptReply> {
  return (isConnection(client) ? client : toConnection(client)).runScript(script, keys, args);
}

/**
 * A script's reply that must be one bulk string (packed binary): the Buffer, or an error naming the script.
 * @example
 * const reply = bufferReply(await connection.runScript(script, keys, args), script.name)
 */
export function bufferReply(reply: ScriptReply, script: string): Buffer {
  if (Buffer.isBuffer(reply)) return reply;
  throw new TypeError(
    `the ${script} script answered ${Array.isArray(reply) ? 'an array' : typeof reply}, not the packed binary ` +
      `string it sends`,
  );
}
