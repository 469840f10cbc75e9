/**
 * The controls on Redis decide exactly as on the memory store: generated limiters (one rule, policies with a
 * shared rule, plans over shared rule names; with and without blockMs) and timelines of consumes, peeks,
 * refunds (with and without a grant time), penalties, blocks, unblocks and resets, compared decision by
 * decision. With the properties of the memory store's tests (a ban never ends early, refunds never pass a
 * fresh state, plan switches never pass the new plan's limit), this carries each property to Redis.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { startArb } from './arbitraries.js';
import { onRedis } from './differential.js';
import {
  FOUND_CONTROL_CASES,
  controlTimelineArb,
  controlsBoth,
  expectSameOutcomes,
  limiterSpecArb,
  sameOutcome,
} from './controls.js';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

const testRedis = useTestRedis();
let redis: Redis;
let server: TestRedis;
beforeAll(() => void ({ server, redis } = testRedis()));

for (const denyCache of [false, true]) {
  describe(`controls: memory and Redis decide identically (client ManualClock, deny cache ${denyCache ? 'on' : 'off'})`, () => {
    it('plans, bans, refunds and penalties over generated limiters and timelines', async () => {
      void server;
      await fc.assert(
        fc.asyncProperty(limiterSpecArb, startArb, controlTimelineArb, async (spec, start, steps) => {
          const { memory, redis: central } = await controlsBoth(onRedis(redis), spec, start, steps, denyCache);
          expectSameOutcomes(spec, steps, memory, central, denyCache);
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

describe('controls: counterexamples found before, decided identically', () => {
  for (const denyCache of [false, true]) {
    it.each(FOUND_CONTROL_CASES)(`deny cache ${denyCache ? 'on' : 'off'}: $name`, async ({ spec, start, steps }) => {
      const { memory, redis: central } = await controlsBoth(onRedis(redis), spec, start, steps, denyCache);
      const at = memory.findIndex((m, i) => !sameOutcome(m, central[i], denyCache ? TOLERANCE_MS : 0));
      expect({ at, redis: central[at] }).toEqual({ at: -1, redis: undefined });
    });
  }
});
