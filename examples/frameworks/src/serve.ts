/**
 * What every framework example shares: the demo controller's limits (examples/http-api) on a memory store,
 * the port (PORT, default 3000; 0 picks a free one), the line the tests wait for, and a clean stop.
 */
import { memoryStore } from '@sluice/core';
import { type DemoLimiters, demoLimiters } from '@sluice/example-http-api/limiters';

export const port = Number(process.env.PORT ?? 3000);

/** The `key` query parameter of a URL, as the count route keys by it. */
export function queryKey(url: string): string | undefined {
  const key = new URL(url, 'http://localhost').searchParams.get('key');
  return key ? `key:${key}` : undefined;
}

/** The demo's limiters; `announce` prints where the server listens and stops it (and them) on SIGTERM or Ctrl-C. */
export function demo(framework: string): {
  limiters: DemoLimiters;
  announce(url: string, close: () => Promise<unknown>): void;
} {
  const store = memoryStore();
  const limiters = demoLimiters(store);
  return {
    limiters,
    announce(url, close) {
      console.log(`sluice ${framework} example listening on ${url}`);
      console.log(`  curl -i '${url}/limiter/count?key=alice'   # 2 per 10 s per key`);
      console.log(`  curl -i '${url}/limiter/rate'              # 1 per 5 s, 5 s of burst`);
      const stop = () => {
        void Promise.resolve(close())
          .then(() => limiters.close())
          .finally(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    },
  };
}
