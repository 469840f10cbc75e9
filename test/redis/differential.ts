import { type Algorithm, type Decision, ManualClock, type Store, memoryStore } from '@sluice/core';
import type { BoundStore } from '@sluice/core/internal';
import { type RedisClient, redisStore } from '@sluice/redis';
import type fc from 'fast-check';
import { expect } from 'vitest';
import { type Step, algorithmArb, policyArb, sharedPolicyArb } from './arbitraries.js';

let run = 0;

/**
 * A central store under test, made per timeline on the timeline's ManualClock (a deadline long enough for a
 * loaded machine), compared with the memory store.
 */
export type CentralStore = (options: { clock: ManualClock; denyCache: boolean }) => Store & {
  close(): Promise<void>;
};

/**
 * redisStore on `redis`, as the differential suites make it.
 * @example
 * await decideBoth(onRedis(redis), rules, start, steps, false)
 */
export const onRedis =
  (redis: RedisClient): CentralStore =>
  ({ clock, denyCache }) =>
    redisStore({ redis, clock, timeoutMs: 5_000, denyCache });

/**
 * Runs one timeline through the memory store and a central store (`central`: onRedis(redis), postgresStore;
 * client clock, a ManualClock each, moved in step) and returns both sides' decisions. Requests at one instant
 * go to the central store concurrently (on Redis: the first leaves at once, alone, decide_one.lua for one
 * rule; the rest together as one batch, decide.lua, folded per key), while the memory store takes them one by one.
 */
export async function decideBoth(
  central: CentralStore,
  rules: Algorithm[],
  startMs: number,
  steps: readonly Step[],
  denyCache: boolean,
): Promise<{ memory: Decision[]; redis: Decision[] }> {
  const prefix = `diff${++run}`;
  const memClock = new ManualClock(startMs);
  const redisClock = new ManualClock(startMs);
  const mem: BoundStore = memoryStore({ clock: memClock }).bind({ rules, prefix });
  const store = central({ clock: redisClock, denyCache });
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

/**
 * The deny cache answers `until - now` where the script recomputes the same instant from state: the same
 * time, up to the rounding of an epoch-scale double (about 0.24 us). With it, times are compared to
 * TOLERANCE_MS (1 us, the precision sluice documents); without it, bit for bit.
 */
export function sameDecision(a: Decision, b: Decision | undefined, timeToleranceMs: number): boolean {
  if (b === undefined) return false;
  if (timeToleranceMs === 0) return JSON.stringify(a) === JSON.stringify(b);
  const close = (x: number, y: number) => x === y || Math.abs(x - y) <= timeToleranceMs;
  const { retryAfterMs: ra, resetAfterMs: rs, waitMs: wa, ...restA } = a;
  const { retryAfterMs: rb, resetAfterMs: rt, waitMs: wb, ...restB } = b;
  return close(ra, rb) && close(rs, rt) && close(wa, wb) && JSON.stringify(restA) === JSON.stringify(restB);
}

/** Fails with the first differing decision and the timeline that led to it. */
export function expectSameDecisions(
  central: Decision[],
  memory: Decision[],
  start: number,
  steps: Step[],
  timeToleranceMs = 0,
): void {
  const i = memory.findIndex((d, j) => !sameDecision(d, central[j], timeToleranceMs));
  if (i === -1) return;
  const flat = steps.flatMap((s) => s.requests.map((r) => ({ dtMs: s.dtMs, ...r })));
  console.error(
    `first difference at decision ${i} (start ${start}); requests so far:\n${JSON.stringify(flat.slice(0, i + 1))}`,
  );
  expect({ at: i, start, request: flat[i], redis: central[i], history: flat.slice(0, i + 1) }).toEqual({
    at: i,
    start,
    request: flat[i],
    redis: memory[i],
    history: flat.slice(0, i + 1),
  });
}

/** The generated limiters the decision suites run (name, rules, runs), on Redis and on PostgreSQL alike. */
export const DECISION_CASES: Array<[string, fc.Arbitrary<Algorithm[]>, number]> = [
  ['every algorithm, generated parameters and timelines, batched requests', algorithmArb().map((rule) => [rule]), 120],
  ['policies with a rule shared across keys (global or per-tenant)', sharedPolicyArb, 60],
  ['multi-rule policies of any algorithms', policyArb, 60],
];
