import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyGenerations } from './key-generations.js';

type Op =
  | { op: 'get' | 'peek' | 'delete'; space: number; key: number }
  | { op: 'set'; space: number; key: number; value: number }
  | { op: 'clear' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('set' as const), space: fc.nat(2), key: fc.nat(40), value: fc.nat() }),
  },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('get' as const), space: fc.nat(2), key: fc.nat(40) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom('peek' as const, 'delete' as const),
      space: fc.nat(2),
      key: fc.nat(40),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) },
);

describe('KeyGenerations', () => {
  it('never holds more than maxKeys; drops a key only after floor(maxKeys / 2) other keys were used since; never answers a wrong value', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(opArb, { maxLength: 300 }), (maxKeys, ops) => {
        const budget = new KeyGenerations(maxKeys);
        const spaces = [0, 1, 2].map((i) => budget.namespace<number>(`ns${i}`));
        for (const space of spaces) space.hold();
        // The model: what was last set per (space, key), and every use (a set, a get that found the key).
        const model = new Map<string, number>();
        let uses: string[] = [];
        const lastUse = new Map<string, number>();
        const use = (id: string) => {
          lastUse.set(id, uses.length);
          uses.push(id);
        };
        const held = () => spaces.reduce((n, s) => n + [...s.entries()].length, 0);
        for (const o of ops) {
          if (o.op === 'clear') {
            budget.clear();
            model.clear();
            uses = [];
            lastUse.clear();
            continue;
          }
          const space = spaces[o.space] as (typeof spaces)[number];
          const id = `${o.space}/${o.key}`;
          const key = `k${o.key}`;
          if (o.op === 'set') {
            space.set(key, o.value);
            model.set(id, o.value);
            use(id);
          } else if (o.op === 'delete') {
            space.delete(key);
            model.delete(id);
          } else {
            const got = o.op === 'get' ? space.get(key) : space.peek(key);
            if (got !== undefined) {
              expect(got).toBe(model.get(id));
              if (o.op === 'get') use(id);
            } else if (model.has(id)) {
              // Evicted: only after at least floor(maxKeys / 2) other keys were used since its last use.
              const since = new Set(uses.slice((lastUse.get(id) as number) + 1).filter((u) => u !== id));
              expect(since.size).toBeGreaterThanOrEqual(Math.floor(maxKeys / 2));
              model.delete(id);
            }
          }
          expect(budget.size).toBe(held());
          expect(budget.size).toBeLessThanOrEqual(maxKeys);
          // The last floor(maxKeys / 2) distinct keys used are all still there (peek leaves ages alone).
          const recent = new Set<string>();
          for (let u = uses.length - 1; u >= 0 && recent.size < Math.floor(maxKeys / 2); u--)
            recent.add(uses[u] as string);
          for (const r of recent) {
            if (!model.has(r)) continue;
            const [n, k] = r.split('/') as [string, string];
            expect(spaces[Number(n)]?.peek(`k${k}`)).toBe(model.get(r));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a namespace a binding holds is kept while empty; a namespace nobody holds goes once it empties', () => {
    const budget = new KeyGenerations(2);
    const held = budget.namespace<number>('held');
    const release = held.hold();
    const loose = budget.namespace<number>('loose');
    loose.set('a', 1);
    for (let i = 0; i < 6; i++) held.set(`k${i}`, i);
    expect(budget.namespace<number>('held')).toBe(held);
    expect(budget.namespace<number>('loose')).not.toBe(loose);
    release();
    release(); // twice: once
    for (let i = 0; i < 6; i++) budget.namespace<number>('other').set(`k${i}`, i);
    expect(budget.namespace<number>('held')).not.toBe(held);
  });
});
