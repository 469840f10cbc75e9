/**
 * The faults the suite injects, each for real on its own throwaway redis-server: where clients connect,
 * and a timeline that breaks Redis and heals it, resolving with the moment it was healthy again.
 */
import { type Cluster, Redis } from 'ioredis';
import { freePort } from '../harness/free-port.js';
import { failOverMasterOf, startTestCluster } from '../harness/redis-cluster.js';
import { type TestRedis, spawnRedisServer, waitForPing } from '../harness/redis-server.js';

type RedisClient = Redis | Cluster;
import { FaultProxy } from './fault-proxy.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function standaloneClient(port: number): () => RedisClient {
  return () => {
    const client = new Redis({ host: '127.0.0.1', port });
    client.on('error', () => {});
    return client;
  };
}

export interface FaultRun {
  /** A new client as an application would make it: ioredis defaults, an error listener. */
  client(): RedisClient;
  /**
   * Where a client of another library connects (it must connect when it is made, so a fault that starts
   * with Redis down has none): a standalone server or a Cluster's nodes.
   */
  readonly address?:
    | { readonly host: string; readonly port: number }
    | { readonly nodes: ReadonlyArray<{ host: string; port: number }> };
  /**
   * Breaks Redis and heals it; resolves with performance.now() at the moment the healing began (the restart
   * spawned, SIGCONT sent, the proxy fixed): recovery is measured from there, Redis's own start-up included.
   */
  inject(): Promise<number>;
  teardown(): Promise<void>;
}

export interface Fault {
  readonly name: string;
  setup(): Promise<FaultRun>;
}

/** How long traffic runs healthy before a fault is injected. */
export const WARM_MS = 1_000;

/** A fault on one throwaway server that stays the same process: `breakAndHeal` runs after the warm-up. */
function onOneServer(name: string, breakAndHeal: (server: TestRedis) => Promise<number>): Fault {
  return {
    name,
    async setup() {
      const server = await spawnRedisServer();
      return {
        client: standaloneClient(server.port),
        address: { host: '127.0.0.1', port: server.port },
        async inject() {
          await sleep(WARM_MS);
          return breakAndHeal(server);
        },
        teardown: () => server.stop(),
      };
    },
  };
}

export const FAULTS: readonly Fault[] = [
  {
    name: 'not running at start-up (up after 2 s)',
    async setup() {
      const port = await freePort();
      let server: TestRedis | undefined;
      return {
        client: standaloneClient(port),
        async inject() {
          await sleep(2_000);
          const healing = performance.now();
          server = await spawnRedisServer([], { port });
          return healing;
        },
        teardown: async () => server?.stop(),
      };
    },
  },
  {
    name: 'kill -9, restarted 2 s later',
    async setup() {
      let server = await spawnRedisServer();
      const port = server.port;
      return {
        client: standaloneClient(port),
        address: { host: '127.0.0.1', port },
        async inject() {
          await sleep(WARM_MS);
          server.process?.kill('SIGKILL');
          await server.stop();
          await sleep(2_000);
          const healing = performance.now();
          server = await spawnRedisServer([], { port });
          return healing;
        },
        teardown: () => server.stop(),
      };
    },
  },
  onOneServer('SIGSTOP for 3 s, then SIGCONT', async (server) => {
    server.process?.kill('SIGSTOP');
    await sleep(3_000);
    const healing = performance.now();
    server.process?.kill('SIGCONT');
    await waitForPing('127.0.0.1', server.port);
    return healing;
  }),
  onOneServer('SCRIPT FLUSH mid-traffic', async (server) => {
    const admin = new Redis(server.url);
    const healing = performance.now();
    await admin.script('FLUSH');
    admin.disconnect();
    return healing;
  }),
  onOneServer('FUNCTION FLUSH and SCRIPT FLUSH mid-traffic', async (server) => {
    const admin = new Redis(server.url);
    const healing = performance.now();
    await admin.call('FUNCTION', 'FLUSH');
    await admin.script('FLUSH');
    admin.disconnect();
    return healing;
  }),
  {
    name: 'proxy: +200 ms latency for 2 s, then connections dropped',
    async setup() {
      const server = await spawnRedisServer();
      const proxy = await FaultProxy.start(server.port);
      return {
        client: standaloneClient(proxy.port),
        address: { host: '127.0.0.1', port: proxy.port },
        async inject() {
          await sleep(WARM_MS);
          proxy.setLatency(200);
          await sleep(2_000);
          const healing = performance.now();
          proxy.setLatency(0);
          proxy.dropConnections();
          return healing;
        },
        async teardown() {
          await proxy.close();
          await server.stop();
        },
      };
    },
  },
];

/** Slower faults, run by `npm run test:faults` (and not by the main suite). */
export const FULL_SWEEP_FAULTS: readonly Fault[] = [
  {
    name: 'Cluster: the master of a busy slot killed, its replica promoted',
    async setup() {
      const cluster = await startTestCluster();
      return {
        address: { nodes: cluster.startupNodes },
        client: () => {
          const client = cluster.client();
          client.on('error', () => {});
          return client;
        },
        async inject() {
          await sleep(WARM_MS);
          // The master serving hash tag {a} (every mode's state for key 'a' lives there), killed; healthy again
          // once another node serves the slot as master.
          return failOverMasterOf(cluster, 'a');
        },
        teardown: () => cluster.stop(),
      };
    },
  },
];
