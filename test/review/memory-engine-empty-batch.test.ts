/**
 * An empty decide batch decides nothing, so it changes nothing: redisEngine sends nothing for it; the memory
 * engine must not raise the prefix's configuration version on it either (the engines would answer a later
 * call under an older version differently).
 */
import { ManualClock, fixedWindow } from '@sluice/core';
import { memoryEngine } from '@sluice/core/engine';
import { stateName } from '@sluice/core/internal';
import { describe, expect, it } from 'vitest';

describe('memoryEngine and an empty decide batch', () => {
  it("leaves the prefix's version as it was", async () => {
    const engine = memoryEngine({ clock: new ManualClock(0) });
    const rule = fixedWindow({ limit: 5, windowMs: 60_000, name: 'r' });
    const under = (version: number) => ({ prefix: 'p', rules: [rule], states: [stateName(rule)], version });
    expect(await engine.decide(under(9), [])).toEqual([]);
    const [answer] = await engine.decide(under(5), [{ key: 'k', permits: 1, maxWaitMs: 0, peek: false, at: 1_000 }]);
    expect(answer).toMatchObject({ decision: { allowed: true } });
  });
});
