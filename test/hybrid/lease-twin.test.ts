/**
 * The memory engine's lease is lease.lua's twin: random leases of a rule of every leasable kind (random nodes,
 * wants, hoarding caps, registrations, times) taken from both at the same client times agree to the bit.
 */
import { stateName } from '../../packages/core/src/algorithms/rule-name.js';
import { memoryEngine } from '@sluice/core/engine';
import { toConnection } from '@sluice/redis/internal';
import { describe, expect, it } from 'vitest';
import {
  CONFORMANCE_KINDS,
  CONFORMANCE_RULES,
} from '../../packages/core/src/contract/conformance/conformance-rules.js';
import { Prng } from '../../packages/core/src/contract/conformance/prng.js';
import { leaseShape } from '../../packages/hybrid/src/lease-client.js';
import { leaseByScript } from '../harness/lease-script.js';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();

describe('memoryEngine.lease is lease.lua', () => {
  it.each(CONFORMANCE_KINDS.flatMap((kind) => [1, 2].map((seed) => [kind, seed] as const)))(
    '%s, seed %i',
    async (kind, seed) => {
      const rng = new Prng(seed * 7919 + kind.length);
      const rule = CONFORMANCE_RULES[kind](rng, { name: 'r' });
      if (rule.lease === undefined) return;
      const engine = memoryEngine();
      const prefix = `lease-twin${Date.now()}-${kind}-${seed}`;
      const rules = { prefix, rules: [rule], states: [stateName(rule)] };
      const shape = leaseShape(rule);
      let now = 1_767_225_600_000 + seed * 3_600_000;
      for (let step = 0; step < 60; step++) {
        now += rng.pick([0, 1, 50, 300, Math.ceil(rule.windowMs / 3)]);
        const key = rng.pick(['x', 'y']);
        const want = rng.int(1, Math.ceil(rule.burst) + 1);
        const node = rng.pick(['n1', 'n2', 'n3']);
        const liveMs = rng.pick([1_000, 3_000]);
        const hoardingDivisor = rng.pick([undefined, 1, 2, 4]);
        const register = rng.chance(0.7);
        const lua = await leaseByScript(toConnection(redis().redis), {
          stateKey: `${prefix}:${key}`,
          lesseesKey: `${prefix}:${key}:lessees`,
          shape,
          want,
          nodeId: node,
          liveMs,
          nowMs: now,
          hoardingDivisor,
          register,
        });
        const mine = await engine.lease(rules, { key, want, node, liveMs, hoardingDivisor, register }, now);
        expect('stale' in mine).toBe(false);
        if ('stale' in mine) return;
        expect(
          {
            granted: mine.granted,
            retryMs: mine.retryMs,
            decidedAtMs: mine.decidedAtMs,
            lessees: mine.lessees,
            left: mine.centralRemaining,
          },
          `step ${step}: ${node} wants ${want} of ${key} at ${now}`,
        ).toEqual({
          granted: lua.granted,
          retryMs: lua.retryMs,
          decidedAtMs: lua.decidedAtMs,
          lessees: lua.liveNodes,
          left: lua.centralRemaining,
        });
      }
    },
  );
});
