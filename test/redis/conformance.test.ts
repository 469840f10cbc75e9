import type { Algorithm } from '@sluice/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { type Step, startArb, timelineArb } from './arbitraries.js';
import { DECISION_CASES, decideBoth, expectSameDecisions, onRedis } from './differential.js';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

const testRedis = useTestRedis();
let server: TestRedis;
let redis: Redis;
beforeAll(() => void ({ server, redis } = testRedis()));
/** The differential run on this suite's ioredis client (see differential.ts). */
const both = (rules: Algorithm[], startMs: number, steps: Step[], denyCache: boolean) =>
  decideBoth(onRedis(redis), rules, startMs, steps, denyCache);

for (const denyCache of [false, true]) {
  const tolerance = denyCache ? TOLERANCE_MS : 0;
  describe(`memory and Redis decide identically (client ManualClock, deny cache ${denyCache ? 'on: times to 1 us' : 'off: bit for bit'})`, () => {
    for (const [name, rulesArb, numRuns] of DECISION_CASES) {
      it(name, async () => {
        await fc.assert(
          fc.asyncProperty(rulesArb, startArb, timelineArb, async (rules, start, steps) => {
            const { memory, redis: central } = await both(rules, start, steps, denyCache);
            expectSameDecisions(central, memory, start, steps, tolerance);
          }),
          // FC_SEED and FC_PATH (printed by a failure) replay one counterexample.
          {
            numRuns,
            ...(process.env.FC_SEED
              ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true }
              : {}),
          },
        );
      });
    }
  });
}
