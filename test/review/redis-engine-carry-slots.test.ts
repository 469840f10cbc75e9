/**
 * redisEngine's adjust 'carry' (ac7e6deb) on a Cluster, for a key whose rules include one counted against
 * another identity (`scope: 'global'`): the key's own rule lives in the key's slot, the scoped one in its
 * scope's, and one carry_key.lua call over both is refused by the Cluster (CROSSSLOT). The contract promises
 * the carry for any rules (memoryEngine makes it); as penalize does, redisEngine must carry slot by slot.
 * (No mode of sluice's reaches this today: a Cluster refuses a scoped policy's reconfigure and an override
 * holds no scoped rule; an engine user's mode over the public redisEngine does.)
 */
import { fixedWindow } from '@sluice/core';
import { type Engine, type EngineRules, isStale, memoryEngine, stateName } from '@sluice/core/engine';
import { redisEngine } from '@sluice/redis';
import { expect, it } from 'vitest';
import { useTestCluster } from '../harness/use-redis.js';

const cluster = useTestCluster();
const HOUR_MS = 3_600_000;

/** Each rule's remaining for 'k' after 4 used under the first rules and an override's carry to the second. */
async function carried(engine: Engine): Promise<unknown> {
  const prefix = `carry-slots-${Date.now()}`;
  const own = fixedWindow({ name: 'own', limit: 10, windowMs: HOUR_MS });
  const shared = fixedWindow({ name: 'shared', limit: 100, windowMs: HOUR_MS, scope: 'global' });
  const before: EngineRules = { prefix, rules: [own, shared], states: [stateName(own), stateName(shared)] };
  const at = Date.UTC(2026, 0, 15, 3, 30);
  const [used] = await engine.decide(before, [{ key: 'k', permits: 4, maxWaitMs: 0, peek: false, at }]);
  expect(used !== undefined && !isStale(used) && used.decision.allowed).toBe(true);

  // An override of 'k' at version 7: both rules in a generation of their own, carried from the first.
  const own2 = fixedWindow({ name: 'own', limit: 20, windowMs: HOUR_MS });
  const shared2 = fixedWindow({ name: 'shared', limit: 200, windowMs: HOUR_MS, scope: 'global' });
  const after: EngineRules = {
    prefix,
    rules: [own2, shared2],
    states: [`${stateName(own2)}\u0002o7`, `${stateName(shared2)}\u0002o7`],
  };
  await engine.adjust(
    after,
    'k',
    {
      op: 'carry',
      links: [
        { rule: 0, from: [{ rule: own, state: stateName(own), mode: 'used' }] },
        { rule: 1, from: [{ rule: shared, state: stateName(shared), mode: 'used' }] },
      ],
    },
    at + 1,
  );
  const [peek] = await engine.decide(after, [{ key: 'k', permits: 1, maxWaitMs: 0, peek: true, at: at + 2 }]);
  return peek !== undefined && !isStale(peek) && peek.verdicts.map((v) => v.remaining);
}

it("on a Cluster, a carry of a key's own rule and a scoped rule carries both, each in its own slot", async () => {
  // The 4 used carried into both rules: a peek of 1 leaves 15 and 195 (a fresh key: 19 and 199), as memoryEngine says.
  const expected = await carried(memoryEngine());
  expect(expected).toEqual([15, 195]);
  expect(await carried(redisEngine({ redis: cluster().client, timeoutMs: 5_000 }))).toEqual(expected);
});
