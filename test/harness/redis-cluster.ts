import { execFileSync } from 'node:child_process';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import { type TestRedis, spawnRedisServer } from './redis-server.js';

export interface TestCluster {
  readonly nodes: readonly TestRedis[];
  /** Seed addresses for an ioredis Cluster client. */
  readonly startupNodes: ReadonlyArray<{ host: string; port: number }>;
  client(): Cluster;
  stop(): Promise<void>;
}

async function until(what: string, maxWaitMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`cluster: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A real Redis Cluster of 3 masters and 3 replicas on free loopback ports, created with
 * `redis-cli --cluster create`. Resolves once the cluster is ok and every replica's link to its master is
 * up (Redis 7 delays a diskless full sync, and a replica that never synced will not take over). With
 * `{ replicas: 0 }`, 3 masters only: enough for slot routing, and up in about a second.
 */
export async function startTestCluster(options: { replicas?: 0 | 1 } = {}): Promise<TestCluster> {
  const replicas = options.replicas ?? 1;
  const flags = ['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000', '--repl-diskless-sync-delay', '0'];
  const nodes = await Promise.all(
    Array.from({ length: 3 * (1 + replicas) }, () =>
      spawnRedisServer([...flags, '--cluster-config-file', 'nodes.conf']),
    ),
  );
  const stop = async () => void (await Promise.all(nodes.map((n) => n.stop())));
  try {
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      {
        stdio: 'ignore',
        timeout: 30_000,
      },
    );
    const direct = nodes.map((n) => new Redis({ host: n.host, port: n.port, lazyConnect: true }));
    try {
      await until('cluster_state:ok on every node', 30_000, async () => {
        const infos = await Promise.all(direct.map((c) => c.cluster('INFO') as Promise<string>));
        return infos.every((i) => i.includes('cluster_state:ok'));
      });
      await until('every replica in sync', 30_000, async () => {
        const infos = await Promise.all(direct.map((c) => c.info('replication')));
        const synced = infos.filter((i) => i.includes('role:slave'));
        return synced.length === 3 * replicas && synced.every((i) => i.includes('master_link_status:up'));
      });
      // Roles travel by gossip: wait until every node's view has them all, not just the replicas' own.
      await until('every node seeing every role', 30_000, async () => {
        const views = await Promise.all(direct.map((c) => c.cluster('NODES') as Promise<string>));
        return views.every((view) => {
          const lines = view.trim().split('\n');
          const masters = lines.filter((l) => / (myself,)?master /.test(l)).length;
          const slaves = lines.filter((l) => / (myself,)?slave /.test(l)).length;
          return masters === 3 && slaves === 3 * replicas;
        });
      });
    } finally {
      for (const c of direct) c.disconnect();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const startupNodes = nodes.map((n) => ({ host: n.host, port: n.port }));
  return {
    nodes,
    startupNodes,
    client: () => new Cluster(startupNodes, { redisOptions: { maxRetriesPerRequest: 3 } }),
    stop,
  };
}

/**
 * Kills (SIGKILL) the master serving `hashTag`'s slot and resolves, with the time (performance.now()), once a node
 * other than the victim serves that slot as master (its replica promoted, after cluster-node-timeout).
 */
export async function failOverMasterOf(cluster: TestCluster, hashTag: string): Promise<number> {
  const slot = calculateSlot(hashTag);
  const masterPort = async (client: Redis) =>
    (await client.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
  const asker = (port: number) => {
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
    client.on('error', () => {});
    return client;
  };
  const first = asker(cluster.startupNodes[0]?.port as number);
  const owner = await masterPort(first).finally(() => first.disconnect());
  const victim = cluster.nodes.find((n) => n.port === owner);
  if (victim === undefined) throw new Error(`no master serves the slot of {${hashTag}}`);
  victim.process?.kill('SIGKILL');
  const other = cluster.nodes.find((n) => n !== victim)?.port as number;
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const probe = asker(other);
    try {
      const served = await masterPort(probe);
      if (served !== undefined && served !== victim.port) return performance.now();
    } catch {
      // a node may be busy electing: ask again
    } finally {
      probe.disconnect();
    }
  }
}
