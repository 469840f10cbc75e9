import { type Algorithm, type Decision, ManualClock, memoryStore } from '@sluice/core';
import type { BoundStore } from '@sluice/core/internal';
import { type RedisClient, redisStore } from '@sluice/redis';
import type { Step } from './arbitraries.js';

let run = 0;

/**
 * Runs one timeline through the memory store and a Redis store on `redis` (client clock, a ManualClock each,
 * moved in step) and returns both sides' decisions. Requests at one instant go to Redis concurrently: the
 * first leaves at once, alone (decide_one.lua for one rule), the rest together as one batch (decide.lua,
 * folded per key), while the memory store takes them one by one.
 */
export async function decideBoth(
  redis: RedisClient,
  rules: Algorithm[],
  startMs: number,
  steps: readonly Step[],
  denyCache: boolean,
): Promise<{ memory: Decision[]; redis: Decision[] }> {
  const prefix = `diff${++run}`;
  const memClock = new ManualClock(startMs);
  const redisClock = new ManualClock(startMs);
  const mem: BoundStore = memoryStore({ clock: memClock }).bind({ rules, prefix });
  const store = redisStore({ redis, clock: redisClock, timeoutMs: 5_000, denyCache });
  const red: BoundStore = store.bind({ rules, prefix });
  const out = { memory: [] as Decision[], redis: [] as Decision[] };
  try {
    // The scripts are loaded before the timeline: GLIDE retries a call that met NOSCRIPT by itself, and a
    // retried call can land after one sent later, so calls keep their order only once the scripts are there.
    await red.peek('warm-up');
    for (const step of steps) {
      memClock.advance(step.dtMs);
      redisClock.advance(step.dtMs);
      for (const r of step.requests)
        out.memory.push(
          await (r.peek ? mem.peek(r.key) : mem.consume(r.key, r.permits, rules.length > 1 ? 0 : r.maxWaitMs)),
        );
      const batch = step.requests.map((r) =>
        r.peek ? red.peek(r.key) : red.consume(r.key, r.permits, rules.length > 1 ? 0 : r.maxWaitMs),
      );
      out.redis.push(...(await Promise.all(batch)));
    }
  } finally {
    await store.close();
  }
  return out;
}
