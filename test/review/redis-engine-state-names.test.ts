/**
 * redisEngine takes the caller's state names (EngineRules.states); a name starting with '~' is a part of the
 * key layout's own (stateKey keeps it as it is: the ban is `~b` beside the states), so such a name must be
 * refused before anything is sent, never written to the key the ban lives at.
 */
import { fixedWindow } from '@sluice/core';
import { redisEngine } from '@sluice/redis';
import { describe, expect, it } from 'vitest';
import { stateKey } from '../../packages/redis/src/key-layout.js';
import { useTestRedis } from '../harness/use-redis.js';

const standalone = useTestRedis();
const rule = fixedWindow({ limit: 5, windowMs: 60_000, name: 'r' });
const ask = { key: 'k', permits: 1, maxWaitMs: 0, peek: false, at: 1_767_225_600_000 } as const;

describe("redisEngine and a state name of the key layout's own", () => {
  it("refuses a state name starting with '~' (the ban's part), with a typed error", async () => {
    const prefix = `tilde${process.pid}`;
    const refused = await redisEngine({ redis: standalone().redis })
      .decide({ prefix, rules: [rule], states: ['~b'] }, [ask])
      .then(
        () => 'decided',
        (e: Error) => e.name,
      );
    // Decided, it wrote the rule's state where the key's ban lives.
    const written = await standalone().redis.exists(stateKey(prefix, 'k', '~b'));
    expect({ refused, written }).toEqual({ refused: 'SluiceRangeError', written: 0 });
  });
});
