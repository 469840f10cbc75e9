import { type Algorithm, type BoundStore, type Decision, ManualClock, TOLERANCE_MS, memoryStore } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { algorithmArb, policyArb, sharedPolicyArb, type Step, startArb, timelineArb } from './arbitraries.js';

const testRedis = useTestRedis();
let server: TestRedis;
let redis: Redis;
beforeAll(() => void ({ server, redis } = testRedis()));
let run = 0;


/**
 * Runs one timeline through the memory store and the Redis store (client clock, a ManualClock each, moved
 * in step) and returns both sides' decisions. Requests at one instant go to Redis concurrently, so they
 * travel as one batch (folded per key) while the memory store takes them one by one.
 */
async function both(rules: Algorithm[], startMs: number, steps: Step[], denyCache: boolean): Promise<{ memory: Decision[]; redis: Decision[] }> {
  const prefix = `conf${++run}`;
  const memClock = new ManualClock(startMs);
  const redisClock = new ManualClock(startMs);
  const mem: BoundStore = memoryStore({ clock: memClock }).bind({ rules, prefix });
  const store = redisStore({ redis, clock: redisClock, timeoutMs: 5_000, denyCache });
  const red: BoundStore = store.bind({ rules, prefix });
  const out = { memory: [] as Decision[], redis: [] as Decision[] };
  try {
    for (const step of steps) {
      memClock.advance(step.dtMs);
      redisClock.advance(step.dtMs);
      for (const r of step.requests) out.memory.push(await (r.peek ? mem.peek(r.key) : mem.consume(r.key, r.permits, rules.length > 1 ? 0 : r.maxWaitMs)));
      const batch = step.requests.map((r) => (r.peek ? red.peek(r.key) : red.consume(r.key, r.permits, rules.length > 1 ? 0 : r.maxWaitMs)));
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
function same(a: Decision, b: Decision | undefined, timeToleranceMs: number): boolean {
  if (b === undefined) return false;
  if (timeToleranceMs === 0) return JSON.stringify(a) === JSON.stringify(b);
  const close = (x: number, y: number) => x === y || Math.abs(x - y) <= timeToleranceMs;
  const { retryAfterMs: ra, resetAfterMs: rs, waitMs: wa, ...restA } = a;
  const { retryAfterMs: rb, resetAfterMs: rt, waitMs: wb, ...restB } = b;
  return close(ra, rb) && close(rs, rt) && close(wa, wb) && JSON.stringify(restA) === JSON.stringify(restB);
}

/** Fails with the first differing decision and the timeline that led to it. */
function expectSame(onRedis: Decision[], memory: Decision[], start: number, steps: Step[], timeToleranceMs = 0): void {
  const i = memory.findIndex((d, j) => !same(d, onRedis[j], timeToleranceMs));
  if (i === -1) return;
  const flat = steps.flatMap((s) => s.requests.map((r) => ({ dtMs: s.dtMs, ...r })));
  console.error(`first difference at decision ${i} (start ${start}); requests so far:\n${JSON.stringify(flat.slice(0, i + 1))}`);
  expect({ at: i, start, request: flat[i], redis: onRedis[i], history: flat.slice(0, i + 1) }).toEqual({
    at: i,
    start,
    request: flat[i],
    redis: memory[i],
    history: flat.slice(0, i + 1),
  });
}

for (const denyCache of [false, true]) {
  const tolerance = denyCache ? TOLERANCE_MS : 0;
  describe(`memory and Redis decide identically (client ManualClock, deny cache ${denyCache ? 'on: times to 1 us' : 'off: bit for bit'})`, () => {
    const cases: Array<[string, fc.Arbitrary<Algorithm[]>, number]> = [
      ['every algorithm, generated parameters and timelines, batched requests', algorithmArb().map((rule) => [rule]), 120],
      ['policies with a rule shared across keys (global or per-tenant)', sharedPolicyArb, 60],
      ['multi-rule policies of any algorithms', policyArb, 60],
    ];
    for (const [name, rulesArb, numRuns] of cases) {
      it(name, async () => {
        await fc.assert(
          fc.asyncProperty(rulesArb, startArb, timelineArb, async (rules, start, steps) => {
            const { memory, redis: onRedis } = await both(rules, start, steps, denyCache);
            expectSame(onRedis, memory, start, steps, tolerance);
          }),
          // FC_SEED and FC_PATH (printed by a failure) replay one counterexample.
          { numRuns, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true } : {}) },
        );
      });
    }
  });
}
