/**
 * carry.lua and each algorithm's USED are carryState and usedAt's Lua twins: for random rules of every kind
 * (before and after a change), histories and carry modes, Redis computes bit for bit what core computes.
 * The decision scripts carry a key's states to a changed configuration with them (docs/live-limits.md).
 */
import { readFileSync } from 'node:fs';
import type { AlgorithmKind } from '@sluice/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { ruleArgs } from '../../packages/redis/src/exact/rule-args.js';
import { algorithmFiles, luaScript, redisLuaFile } from '../../packages/redis/src/scripts.js';
import { ALGORITHMS, historyArb, stateAfter } from '@sluice/test-kit';
import { useTestRedis } from '../harness/use-redis.js';
import { CARRY_MODES, carryState } from '../../packages/core/src/algorithms/carry.js';

const testRedis = useTestRedis();
let redis: Redis;
beforeAll(() => void ({ redis } = testRedis()));

const KINDS = Object.keys(ALGORITHMS) as AlgorithmKind[];
/** A rule's size before or after a change. */
const size = fc.record({
  limit: fc.integer({ min: 1, max: 200 }),
  windowMs: fc.integer({ min: 10, max: 60_000 }),
  perSecond: fc.double({ min: 0.01, max: 1_000, noNaN: true }),
});
const probe = luaScript('test:carry-probe', [
  ...algorithmFiles(KINDS),
  redisLuaFile('carry'),
  { file: 'carry_probe', source: readFileSync(new URL('lua/carry_probe.lua', import.meta.url), 'utf8') },
]);

/** A state as the Lua twins hold it: its fields in order (a log's entries as they are). */
function wire(state: unknown): number[] {
  const log = (state as { entries?: number[] }).entries;
  if (log !== undefined) return log;
  return Object.values(state as Record<string, number>);
}

/** A state of `kind` from its fields in order (the shape core gives it: same field names, same order). */
function unwire(like: unknown, values: number[]): unknown {
  if (like !== undefined && (like as { entries?: unknown }).entries !== undefined) return { entries: values };
  return values;
}

const pack = (values: readonly number[]) => {
  const b = Buffer.alloc(values.length * 8);
  for (const [i, v] of values.entries()) b.writeDoubleLE(v, i * 8);
  return b;
};
const unpack = (b: Buffer) => Array.from({ length: b.length / 8 }, (_, i) => b.readDoubleLE(i * 8));

describe('carry.lua is carryState, USED is usedAt: bit for bit', () => {
  it('random rules of every kind, histories and modes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...KINDS),
        fc.constantFrom(...CARRY_MODES),
        size,
        size,
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        historyArb(20, 5_000, 40),
        fc.integer({ min: 0, max: 20_000 }),
        async (kind, mode, before, after, start, steps, later) => {
          const from = ALGORITHMS[kind].example(before);
          const to = ALGORITHMS[kind].example(after);
          let [state, now] = stateAfter(from, start, steps);
          now += later;
          const carried = carryState(from, to, state, now, mode);
          const reply = (await redis.callBuffer(
            'EVAL',
            probe.source,
            0,
            ruleArgs([from])[0],
            ruleArgs([to])[0],
            pack([from.limit, from.burst, to.limit, to.burst]),
            from.stateFormat,
            to.stateFormat,
            state === undefined ? '' : pack(wire(state)),
            pack([now]),
            mode,
          )) as [Buffer, Buffer];
          expect(Object.is(unpack(reply[0])[0], from.usedAt(state, now)), `${kind} used`).toBe(true);
          const lua = reply[1].length === 0 ? undefined : unwire(carried, unpack(reply[1]));
          expect(lua === undefined ? undefined : lua, `${kind} ${mode}`).toStrictEqual(
            carried === undefined ? undefined : (carried as { entries?: unknown }).entries ? carried : wire(carried),
          );
        },
      ),
      { numRuns: 400 },
    );
  });
});
