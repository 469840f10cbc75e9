/**
 * The controls on Redis decide exactly as on the memory store: generated limiters (one rule, policies with a
 * shared rule, plans over shared rule names; with and without blockMs) and timelines of consumes, peeks,
 * refunds (with and without a grant time), penalties, blocks, unblocks and resets, compared decision by
 * decision. With the properties of the memory store's tests (a ban never ends early, refunds never pass a
 * fresh state, plan switches never pass the new plan's limit), this carries each property to Redis.
 */
import { type Algorithm, type Decision, tokenBucket } from '@sluice/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { startArb } from './arbitraries.js';
import {
  type ControlStep,
  type LimiterSpec,
  type Outcome,
  controlTimelineArb,
  controlsBoth,
  limiterSpecArb,
} from './controls.js';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

const testRedis = useTestRedis();
let redis: Redis;
let server: TestRedis;
beforeAll(() => void ({ server, redis } = testRedis()));

/** Equal outcomes: bit for bit, or with the deny cache (which recomputes instants from local time) times to 1 us. */
function same(a: Outcome, b: Outcome | undefined, toleranceMs: number): boolean {
  if (b === undefined) return false;
  if (toleranceMs === 0 || 'error' in a || 'error' in b) return JSON.stringify(a) === JSON.stringify(b);
  const close = (x: number, y: number) => x === y || Math.abs(x - y) <= toleranceMs;
  const { retryAfterMs: ra, resetAfterMs: rs, waitMs: wa, ...restA } = a as Decision;
  const { retryAfterMs: rb, resetAfterMs: rt, waitMs: wb, ...restB } = b as Decision;
  return close(ra, rb) && close(rs, rt) && close(wa, wb) && JSON.stringify(restA) === JSON.stringify(restB);
}

/** A limiter spec as text: each rule's kind, name, parameters, blockMs and scope. */
function describeSpec(spec: LimiterSpec): string {
  const rules = (list: readonly Algorithm[]) =>
    list.map((r) => ({ kind: r.kind, name: r.name, params: r.params, blockMs: r.blockMs, scope: r.scope }));
  return JSON.stringify(
    'plans' in spec
      ? Object.fromEntries(Object.entries(spec.plans).map(([plan, list]) => [plan, rules(list)]))
      : rules(spec.rules),
  );
}

for (const denyCache of [false, true]) {
  describe(`controls: memory and Redis decide identically (client ManualClock, deny cache ${denyCache ? 'on' : 'off'})`, () => {
    it('plans, bans, refunds and penalties over generated limiters and timelines', async () => {
      void server;
      await fc.assert(
        fc.asyncProperty(limiterSpecArb, startArb, controlTimelineArb, async (spec, start, steps) => {
          const { memory, redis: onRedis } = await controlsBoth(redis, spec, start, steps, denyCache);
          const at = memory.findIndex((m, i) => !same(m, onRedis[i], denyCache ? TOLERANCE_MS : 0));
          if (at !== -1) {
            console.error(
              `first difference at outcome ${at}: ${describeSpec(spec)}\n${JSON.stringify(steps)}\nmemory: ` +
                `${JSON.stringify(memory[at])}\nredis:  ${JSON.stringify(onRedis[at])}`,
            );
            expect({ at, redis: onRedis[at] }).toEqual({ at, redis: memory[at] });
          }
          expect(onRedis).toHaveLength(memory.length);
        }),
        // FC_SEED and FC_PATH (printed by a failure) replay one counterexample.
        {
          numRuns: Number(process.env.FC_RUNS ?? 300),
          ...(process.env.FC_SEED
            ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true }
            : {}),
        },
      );
    });
  });
}

/**
 * Counterexamples the generator found once its buckets could start part-filled (`initialPermits` below capacity), kept
 * as fixed cases: each differed between memory and Redis before its fix.
 */
const FOUND: ReadonlyArray<{ name: string; spec: LimiterSpec; start: number; steps: ControlStep[] }> = [
  {
    // Redis deleted the state a refusing rule of a smaller plan took as forgotten (4 tokens read at capacity 1):
    // a denial deletes nothing now, and tokens above a plan's capacity are capped, not forgotten.
    name: "a smaller plan's denial leaves a larger plan's bucket as it was",
    spec: {
      plans: {
        p0: [
          tokenBucket({ name: 'a', capacity: 11, refillPerSecond: 0.55, initialPermits: 0, maxDebt: 22 }),
          tokenBucket({ name: 'b', capacity: 1, refillPerSecond: 0.05, initialPermits: 0, maxDebt: 2 }),
        ],
        p1: [tokenBucket({ name: 'b', capacity: 4, refillPerSecond: 0.2, initialPermits: 0, maxDebt: 2 })],
      },
    },
    start: 0,
    steps: [
      { dtMs: 36, calls: [call('consume', 'b', 1, 1), call('refund', 'b', 1, 2)] },
      { dtMs: 0, calls: [call('refund', 'c{1}', 1, 1), call('refund', 'b', 10, 5)] },
      { dtMs: 6, calls: [call('consume', 'b', 4, 4), call('penalize', 'b', 1, 5), call('consume', 'a', 1, 4)] },
    ],
  },
  {
    // The deny cache answered "1 ms" for a banned key whose part-filled bucket was forgotten when the ban ended
    // (its tokens dropped back to initialPermits): such a bucket's denials are not cached now.
    name: 'a part-filled bucket forgotten as its ban ends: no cached denial stands for it',
    spec: {
      rules: [
        tokenBucket({ capacity: 1, refillPerSecond: 0.5277044854881267, initialPermits: 0, maxDebt: 0, blockMs: 3421 }),
      ],
    },
    start: 1_700_000_000_000,
    steps: [
      { dtMs: 0, calls: [call('penalize', 'a', 4)] },
      { dtMs: 1839, calls: [{ ...call('block', 'a', 1), ms: 1 }] },
      { dtMs: 3901, calls: [call('peek', 'a', 1)] },
      { dtMs: 2210, calls: [call('consume', 'a', 1)] },
      { dtMs: 3402, calls: [call('peek', 'a', 1)] },
      { dtMs: 18, calls: [call('consume', 'a', 1)] },
      { dtMs: 0, calls: [call('consume', 'a', 1)] },
    ],
  },
];

/** One call of a fixed timeline. */
function call(op: ControlStep['calls'][number]['op'], key: string, permits: number, plan = 0) {
  return { op, key, permits, plan, grant: undefined, rulePermits: undefined, ms: 1 };
}

describe('controls: counterexamples found before, decided identically', () => {
  for (const denyCache of [false, true]) {
    it.each(FOUND)(`deny cache ${denyCache ? 'on' : 'off'}: $name`, async ({ spec, start, steps }) => {
      const { memory, redis: onRedis } = await controlsBoth(redis, spec, start, steps, denyCache);
      const at = memory.findIndex((m, i) => !same(m, onRedis[i], denyCache ? TOLERANCE_MS : 0));
      expect({ at, redis: onRedis[at] }).toEqual({ at: -1, redis: undefined });
    });
  }
});
