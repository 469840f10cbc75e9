import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { type DemoApp, createDemoApp } from './app.js';

export interface RunningDemo {
  readonly demo: DemoApp;
  readonly server: Server;
  readonly url: string;
  readonly storeName: string;
  stop(): Promise<void>;
}

/** Starts the demo on PORT (default 3000; 0 picks a free one), with Redis when REDIS_URL is set. */
export async function startDemo(port = Number(process.env.PORT ?? 3000)): Promise<RunningDemo> {
  const redisUrl = process.env.REDIS_URL;
  const redis = redisUrl ? new Redis(redisUrl, { maxRetriesPerRequest: 1 }) : undefined;
  const demo = createDemoApp(redis === undefined ? {} : { store: redisStore({ redis }) });
  const server = demo.app.listen(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    demo,
    server,
    url,
    storeName: redis === undefined ? 'memory store' : `Redis at ${redisUrl}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await demo.close();
      redis?.disconnect();
    },
  };
}

export function curlLines(url: string): string[] {
  return [
    `curl -i '${url}/limiter/count?key=alice'     # 2 per 10 s per key`,
    `curl -i '${url}/limiter/rate'                # 1 per 5 s, 5 s of burst`,
    `curl -i '${url}/limiter/rate2'               # 1 per 30 s, from the handler's code`,
    `curl -i -H 'X-User-Id: 42' '${url}/api/orders' # 200 / 10 s, 5,000 / h, 20,000 / day per user + global`,
  ];
}

/** Stops on Ctrl-C or SIGTERM. */
export function stopOnSignal(running: RunningDemo): void {
  const stop = () => {
    void running.stop().finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
