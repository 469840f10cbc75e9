/**
 * The controls on Redis decide exactly as on the memory store: generated limiters (one rule, policies with a
 * shared rule, plans over shared rule names; with and without blockMs) and timelines of consumes, peeks,
 * refunds (with and without a grant time), penalties, blocks, unblocks and resets, compared decision by
 * decision. With the properties of the memory store's tests (a ban never ends early, refunds never pass a
 * fresh state, plan switches never pass the new plan's limit), this carries each property to Redis.
 */
import { type Algorithm, type Decision, TOLERANCE_MS } from '@sluice/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { startArb } from './arbitraries.js';
import { type LimiterSpec, type Outcome, controlTimelineArb, controlsBoth, limiterSpecArb } from './controls.js';

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

/** A limiter spec as text: each rule's kind, name, parameters, blockMs and key. */
function describeSpec(spec: LimiterSpec): string {
  const rules = (list: readonly Algorithm[]) =>
    list.map((r) => ({ kind: r.kind, name: r.name, params: r.params, blockMs: r.blockMs, key: r.key }));
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
