/**
 * redisEngine keeps a decision transport per rules object: what it derives must follow the object's current
 * contents (a caller that raises `version` on its own object after a stale answer, as the contract's isStale
 * example suggests, must then decide under the new version), and a rules object core's checks accept (a lone
 * rule, not in a list) must be refused as the memory engine refuses it
 * (EngineRules holds a list), not fail inside the engine.
 */
import { fixedWindow } from '@sluice/core';
import { type Engine, type EngineRules, isStale, memoryEngine } from '@sluice/core/engine';
import { stateName } from '@sluice/core/internal';
import { redisEngine } from '@sluice/redis';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const standalone = useTestRedis();
let run = 0;
const nextPrefix = () => `review${process.pid}-${++run}`;
const ask = { key: 'k', permits: 1, maxWaitMs: 0, peek: false, at: 1_767_225_600_000 } as const;

async function afterRaise(engine: Engine): Promise<unknown> {
  const rule = fixedWindow({ limit: 5, windowMs: 60_000, name: 'r' });
  const prefix = nextPrefix();
  // A newer node already decided under version 3.
  await engine.decide({ prefix, rules: [rule], states: [stateName(rule)], version: 3 }, [ask]);
  const mine: { prefix: string; rules: (typeof rule)[]; states: string[]; version: number } = {
    prefix,
    rules: [rule],
    states: [stateName(rule)],
    version: 2,
  };
  const [first] = await engine.decide(mine, [ask]);
  expect(first !== undefined && isStale(first) ? first.stale : undefined).toBe(3);
  mine.version = first !== undefined && isStale(first) ? first.stale : 0;
  const [second] = await engine.decide(mine, [ask]);
  return second;
}

describe('redisEngine and the rules object a caller passes', () => {
  it('decides under the version the object holds now (memory engine: the same)', async () => {
    const memory = await afterRaise(memoryEngine());
    expect(isStale(memory as object)).toBe(false);
    const redis = await afterRaise(redisEngine({ redis: standalone().redis }));
    expect(redis).toMatchObject({ decision: { allowed: true } });
  });

  it('refuses a lone rule (not in a list) as the memory engine does, with a typed error', async () => {
    const rule = fixedWindow({ limit: 5, windowMs: 60_000, name: 'r' });
    const lone = (prefix: string) => ({ prefix, rules: rule, states: [stateName(rule)] }) as unknown as EngineRules;
    for (const engine of [memoryEngine(), redisEngine({ redis: standalone().redis })])
      await expect(engine.decide(lone(nextPrefix()), [ask])).rejects.toThrow(
        expect.objectContaining({
          name: 'SluiceTypeError',
          message: expect.stringMatching(/rules\.rules must be an array/),
        }),
      );
  });
});
