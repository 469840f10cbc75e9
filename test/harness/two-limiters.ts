/**
 * Two nodes of one limiter on one Redis server: two limiters of a fresh prefix, each on its own client and
 * redisStore, ready; closed, stores and clients included, after the body. The cross-node list and ban tests
 * share it.
 */
import { type Clock, type Limiter, type Rules, createLimiter } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

export interface TwoLimitersOptions {
  /** The server's URL (`redis://127.0.0.1:PORT`). */
  readonly url: string;
  readonly rules: Rules;
  /** The prefix's stem: the prefix is `${stem}-${pid}-${n}`, fresh for every call. */
  readonly stem: string;
  /** The limiters' `accessList.refreshMs` (the default when absent). */
  readonly refreshMs?: number | undefined;
  /** Each store's decision clock (Redis TIME where absent). */
  readonly clocks?: readonly (Clock | undefined)[];
}

let made = 0;

export async function withTwoLimiters(
  options: TwoLimitersOptions,
  body: (a: Limiter, b: Limiter, prefix: string) => Promise<void>,
): Promise<void> {
  const { url, rules, stem, refreshMs, clocks = [] } = options;
  const clients = [new Redis(url), new Redis(url)];
  const stores = clients.map((redis, i) => {
    const clock = clocks[i];
    return redisStore(clock === undefined ? { redis } : { redis, clock });
  });
  const prefix = `${stem}-${process.pid}-${++made}`;
  const [a, b] = stores.map((store) =>
    createLimiter({ rules, store, prefix, ...(refreshMs === undefined ? {} : { accessList: { refreshMs } }) }),
  ) as [Limiter, Limiter];
  try {
    await Promise.all([a.ready(), b.ready()]);
    await body(a, b, prefix);
  } finally {
    await Promise.all([a.close(), b.close()]);
    await Promise.all(stores.map((store) => store.close()));
    for (const client of clients) client.disconnect();
  }
}
