/**
 * Every Redis client library sluice supports, opened the way its users open it, against a throwaway
 * server or Cluster. Real clients, never mocks: each talks to a real redis-server.
 */
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import type { RedisClient } from '@sluice/redis';
import { Cluster as IoredisCluster, Redis as Ioredis } from 'ioredis';
import { Cluster as Ioredis5Cluster, Redis as Ioredis5 } from 'ioredis5';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';

export const CLIENT_KINDS = ['ioredis', 'ioredis5', 'iovalkey', 'node-redis', 'node-redis5', 'glide'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

export interface OpenClient {
  readonly kind: ClientKind;
  readonly client: RedisClient;
  close(): Promise<void>;
}

interface Address {
  readonly host: string;
  readonly port: number;
}

/** An ACL user's name and password. */
export interface Credentials {
  readonly username: string;
  readonly password: string;
}

interface IoredisShaped {
  ping(): Promise<unknown>;
  disconnect(): void;
}

async function ioredisLike(kind: ClientKind, client: IoredisShaped): Promise<OpenClient> {
  await client.ping();
  return { kind, client: client as unknown as RedisClient, close: async () => client.disconnect() };
}

interface NodeRedisShaped {
  on(event: 'error', listener: () => void): unknown;
  connect(): Promise<unknown>;
  destroy(): void;
}

async function nodeRedis(kind: ClientKind, client: NodeRedisShaped): Promise<OpenClient> {
  client.on('error', () => {});
  await client.connect();
  return { kind, client: client as unknown as RedisClient, close: async () => client.destroy() };
}

const urlOf = (a: Address, user?: Credentials): string =>
  `redis://${user === undefined ? '' : `${user.username}:${user.password}@`}${a.host}:${a.port}`;
const addressOf = (a: Address): Address => ({ host: a.host, port: a.port });
const glideTimeouts = { requestTimeout: 5_000 };

/** How each library opens a standalone client and a Cluster client: one row per library. */
const LIBRARIES: Record<
  ClientKind,
  {
    standalone(server: Address, user?: Credentials): Promise<OpenClient>;
    cluster(nodes: readonly Address[]): Promise<OpenClient>;
  }
> = {
  ioredis: {
    standalone: (server, user) => ioredisLike('ioredis', new Ioredis(urlOf(server, user))),
    cluster: (nodes) => ioredisLike('ioredis', new IoredisCluster(nodes.map(addressOf))),
  },
  ioredis5: {
    standalone: (server, user) => ioredisLike('ioredis5', new Ioredis5(urlOf(server, user))),
    cluster: (nodes) => ioredisLike('ioredis5', new Ioredis5Cluster(nodes.map(addressOf))),
  },
  iovalkey: {
    standalone: (server, user) => ioredisLike('iovalkey', new Iovalkey(urlOf(server, user))),
    cluster: (nodes) => ioredisLike('iovalkey', new IovalkeyCluster(nodes.map(addressOf))),
  },
  'node-redis': {
    standalone: (server, user) => nodeRedis('node-redis', createClient({ url: urlOf(server, user) })),
    cluster: (nodes) => nodeRedis('node-redis', createCluster({ rootNodes: nodes.map((n) => ({ url: urlOf(n) })) })),
  },
  'node-redis5': {
    standalone: (server, user) => nodeRedis('node-redis5', createClient5({ url: urlOf(server, user) })),
    cluster: (nodes) => nodeRedis('node-redis5', createCluster5({ rootNodes: nodes.map((n) => ({ url: urlOf(n) })) })),
  },
  glide: {
    standalone: async (server, user) =>
      glideClient(
        await GlideClient.createClient({
          addresses: [addressOf(server)],
          ...glideTimeouts,
          ...(user === undefined ? {} : { credentials: user }),
        }),
      ),
    cluster: async (nodes) =>
      glideClient(await GlideClusterClient.createClient({ addresses: nodes.map(addressOf), ...glideTimeouts })),
  },
};

function glideClient(client: GlideClient | GlideClusterClient): OpenClient {
  return { kind: 'glide', client, close: async () => client.close() };
}

/** A standalone client of `kind`, connected to `server` (as `user` when given). */
export function openClient(kind: ClientKind, server: Address, user?: Credentials): Promise<OpenClient> {
  return LIBRARIES[kind].standalone(server, user);
}

/** A Cluster client of `kind`, given the Cluster's nodes. */
export function openClusterClient(kind: ClientKind, nodes: readonly Address[]): Promise<OpenClient> {
  return LIBRARIES[kind].cluster(nodes);
}
