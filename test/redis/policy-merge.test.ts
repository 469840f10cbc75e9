/**
 * One policy merge (core's mergePolicy) for the memory store, the decide script's replies and policies
 * decided slot by slot on a Cluster: the same timeline gives the same Decision on all three. Before, the
 * slot-by-slot merge named the first refusing rule while taking retryAfterMs from the slowest, so a
 * decision could report one rule's name and limit beside another rule's retry time.
 */
import { type Decision, ManualClock, createLimiter, fixedWindow, memoryStore, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { describe, expect, it } from 'vitest';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();

let n = 0;
const policy = () => [
  fixedWindow({ limit: 1, windowMs: 10_000, name: 'user' }),
  tokenBucket({ capacity: 3, refillPerSecond: 0.05, name: 'tenant', scope: (k: string) => k.split('/')[0] as string }),
  fixedWindow({ limit: 2, windowMs: 60_000, name: 'global', scope: 'all' }),
];

/** The same requests through memory, standalone Redis and a Cluster (slot by slot), each on its own ManualClock. */
async function decideEverywhere(
  requests: Array<{ key: string; advanceMs: number; peek?: boolean }>,
): Promise<Record<string, Decision[]>> {
  const out: Record<string, Decision[]> = {};
  const stores = {
    memory: (clock: ManualClock) => memoryStore({ clock }),
    standalone: (clock: ManualClock) =>
      redisStore({ redis: testRedis().redis, clock, denyCache: false, timeoutMs: 5_000 }),
    cluster: (clock: ManualClock) =>
      redisStore({ redis: testCluster().client, clock, denyCache: false, timeoutMs: 5_000 }),
  };
  const start = 1_700_000_000_000;
  for (const [name, make] of Object.entries(stores)) {
    const clock = new ManualClock(start);
    const limiter = createLimiter({ rules: policy(), store: make(clock), prefix: `merge${++n}` });
    out[name] = [];
    for (const r of requests) {
      clock.advance(r.advanceMs);
      out[name].push(await (r.peek ? limiter.peek(r.key) : limiter.tryAcquire(r.key)));
    }
    await limiter.close();
  }
  return out;
}

describe('one policy merge', () => {
  it('the rule named is the one the retry time comes from, on memory, standalone Redis and a Cluster alike', async () => {
    const {
      memory,
      standalone,
      cluster: onCluster,
    } = await decideEverywhere([
      { key: 'acme/alice', advanceMs: 0 },
      { key: 'acme/bob', advanceMs: 100 },
      { key: 'acme/alice', advanceMs: 100 }, // user and global both refuse: global's retry is the longer
      { key: 'acme/carol', advanceMs: 100 }, // only global refuses
      { key: 'acme/alice', advanceMs: 100, peek: true },
      { key: 'acme/dave', advanceMs: 11_000 },
    ]);
    const third = memory?.[2] as Decision;
    expect(third).toMatchObject({ allowed: false, rule: 'global', limit: 2 });
    // Longer than anything the 10 s user window could ask: the retry time is global's.
    expect(third.retryAfterMs).toBeGreaterThan(10_000);
    expect(standalone).toEqual(memory);
    expect(onCluster).toEqual(memory);
  });
});
