import { SluiceTypeError } from '@sluice/core';
import { describeValue } from '@sluice/core/internal';
import type { RedisConnection } from './connection.js';
import { GlideConnection, type GlideLike, glideClosed, isGlideLike } from './glide.js';
import { IoredisConnection, type IoredisLike, ioredisSubscribed, isIoredisLike } from './ioredis.js';
import { NodeRedisConnection, type NodeRedisLike, isNodeRedisLike } from './node-redis.js';

/**
 * A Redis client as the user has it: ioredis 5/6 (`Redis`, `Cluster`), iovalkey, node-redis 5/6
 * (`createClient`, `createCluster`) or Valkey GLIDE 2 (`GlideClient`, `GlideClusterClient`). Recognised by
 * shape: no wrapper, and none of these libraries is a dependency of sluice.
 */
export type RedisClient = IoredisLike | NodeRedisLike | GlideLike;

const ACCEPTED =
  'an ioredis Redis or Cluster, an iovalkey client, a node-redis client or cluster (createClient / ' +
  'createCluster, connected), or a Valkey GLIDE client (GlideClient / GlideClusterClient)';

const connections = new WeakMap<object, RedisConnection>();

/**
 * The connection for a client (one per client, shared by every store on it). Throws a SluiceTypeError at
 * construction, before anything is built or opened, for an object that is no supported client, a client
 * already closed, and a client in subscriber mode (it can run no script).
 * @example
 * const connection = toConnection(redis) // ioredis, node-redis, iovalkey or GLIDE
 */
export function toConnection(value: unknown, option = 'redis'): RedisConnection {
  const refuse = (why: string): never => {
    throw new SluiceTypeError(option, value, `${option} must be ${ACCEPTED}; ${why}`);
  };
  if (typeof value !== 'object' || value === null) return refuse(`got ${describeValue(value)}`);
  let make: () => RedisConnection;
  if (isGlideLike(value)) {
    if (glideClosed(value)) refuse('got a GLIDE client that is closed');
    make = () => new GlideConnection(value);
  } else if (isNodeRedisLike(value)) {
    if (!value.isOpen)
      refuse(
        'got a node-redis client that is not open: call client.connect() first (it need not be awaited: a ' +
          'connecting client is accepted, so CommonJS code can pass it at once); a closed client cannot be used',
      );
    if (value.isPubSubActive === true)
      refuse('got a node-redis client in subscriber mode (it can run no script): pass a client of its own');
    make = () => new NodeRedisConnection(value);
  } else if (isIoredisLike(value)) {
    if (value.status === 'end') refuse("got an ioredis client that was closed (status 'end')");
    if (ioredisSubscribed(value))
      refuse('got an ioredis client in subscriber mode (it can run no script): pass a client of its own');
    make = () => new IoredisConnection(value, 'ioredis');
  } else {
    return refuse(`got ${describeValue(value)} without the methods of any of them`);
  }
  let connection = connections.get(value);
  if (connection === undefined) connections.set(value, (connection = make()));
  return connection;
}
