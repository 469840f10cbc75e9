import type { Algorithm, Decision } from '@sluice/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestRedis } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { algorithmArb, policyArb, sharedPolicyArb, type Step, startArb, timelineArb } from './arbitraries.js';
import { decideBoth } from './differential.js';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

const testRedis = useTestRedis();
let server: TestRedis;
let redis: Redis;
beforeAll(() => void ({ server, redis } = testRedis()));
/** The differential run on this suite's ioredis client (see differential.ts). */
const both = (rules: Algorithm[], startMs: number, steps: Step[], denyCache: boolean) =>
  decideBoth(redis, rules, startMs, steps, denyCache);

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
  console.error(
    `first difference at decision ${i} (start ${start}); requests so far:\n${JSON.stringify(flat.slice(0, i + 1))}`,
  );
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
      [
        'every algorithm, generated parameters and timelines, batched requests',
        algorithmArb().map((rule) => [rule]),
        120,
      ],
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
