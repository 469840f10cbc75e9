import type { RedisConnection } from './connection/connection.js';
import { isAclRefusal } from './reply-errors.js';

/**
 * What is wrong, when `error` says the store cannot work with this Redis whatever the traffic: a missing
 * permission (the server's refusal names the command, key or channel, in its own words: see isAclRefusal), or
 * a client whose mode is not the server's.
 * Undefined for anything else (unreachable, loading, a timeout): those pass, and the fail mode covers them.
 * @example
 * const why = misconfiguration(error, connection) // e.g. a NOPERM naming the command, or undefined
 */
export function misconfiguration(error: unknown, connection: RedisConnection): string | undefined {
  const messages = errorMessages(error);
  const refusal = messages.find(isAclRefusal);
  if (refusal !== undefined) {
    return (
      `the Redis user lacks a permission the store needs: ${refusal}. The README's "Production connections" ` +
      'section gives the ACL line with every command, key pattern and channel it uses'
    );
  }
  const clusterReply = connection.isCluster
    ? undefined
    : messages.find((m) => /^(MOVED|ASK|CROSSSLOT|CLUSTERDOWN)\b/.test(m));
  if (clusterReply !== undefined) {
    return (
      `the client is a standalone one (${connection.description}), but the server is a Redis Cluster node ` +
      `(it answered "${clusterReply}"): pass a Cluster client (ioredis new Cluster(...), node-redis ` +
      'createCluster(...), GlideClusterClient)'
    );
  }
  if (connection.isCluster && messages.some((m) => /cluster support disabled/i.test(m))) {
    return (
      `the client is a Cluster client (${connection.description}), but the server is a standalone Redis ` +
      '(cluster support disabled): pass a standalone client (ioredis new Redis(...), node-redis ' +
      'createClient(...), GlideClient)'
    );
  }
  return undefined;
}

/** An error's message and those it wraps (ioredis's ClusterAllFailedError keeps the node's in lastNodeError). */
function errorMessages(error: unknown): string[] {
  const messages: string[] = [];
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; depth++) {
    messages.push(e.message);
    const inner = e as Error & { lastNodeError?: unknown };
    e = inner.lastNodeError ?? inner.cause;
  }
  return messages;
}
