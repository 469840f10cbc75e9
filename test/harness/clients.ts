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

/** A standalone client of `kind`, connected to `server`. */
export async function openClient(kind: ClientKind, server: Address): Promise<OpenClient> {
  const url = `redis://${server.host}:${server.port}`;
  switch (kind) {
    case 'ioredis':
      return ioredisLike(kind, new Ioredis(url));
    case 'ioredis5':
      return ioredisLike(kind, new Ioredis5(url));
    case 'iovalkey':
      return ioredisLike(kind, new Iovalkey(url));
    case 'node-redis':
      return nodeRedis(kind, createClient({ url }));
    case 'node-redis5':
      return nodeRedis(kind, createClient5({ url }));
    case 'glide': {
      const client = await GlideClient.createClient({ addresses: [{ host: server.host, port: server.port }], requestTimeout: 5_000 });
      return { kind, client, close: async () => client.close() };
    }
  }
}

/** A Cluster client of `kind`, given the Cluster's nodes. */
export async function openClusterClient(kind: ClientKind, nodes: readonly Address[]): Promise<OpenClient> {
  const seeds = nodes.map((n) => ({ host: n.host, port: n.port }));
  const rootNodes = nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` }));
  switch (kind) {
    case 'ioredis':
      return ioredisLike(kind, new IoredisCluster(seeds));
    case 'ioredis5':
      return ioredisLike(kind, new Ioredis5Cluster(seeds));
    case 'iovalkey':
      return ioredisLike(kind, new IovalkeyCluster(seeds));
    case 'node-redis':
      return nodeRedis(kind, createCluster({ rootNodes }));
    case 'node-redis5':
      return nodeRedis(kind, createCluster5({ rootNodes }));
    case 'glide': {
      const client = await GlideClusterClient.createClient({ addresses: nodes.map((n) => ({ host: n.host, port: n.port })), requestTimeout: 5_000 });
      return { kind, client, close: async () => client.close() };
    }
  }
}
