import { ALGORITHMS, ALGORITHM_KINDS } from '@sluice/test-kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RULE_FACTORIES, ruleFromSpec, ruleSpec } from './rule-spec.js';

describe('a rule as data (ruleSpec, ruleFromSpec)', () => {
  it('every kind, named or not, with a ban or not, comes back the same rule: name, parameters, state format', () => {
    fc.assert(
      fc.property(
        fc
          .constantFrom(...ALGORITHM_KINDS)
          .chain((kind) =>
            fc.tuple(
              ALGORITHMS[kind].shapes,
              fc.integer({ min: 1, max: 1_000 }),
              fc.boolean(),
              fc.nat({ max: 60_000 }),
            ),
          ),
        ([shape, limit, named, blockMs]) => {
          const rule = shape(limit, { ...(named ? { name: 'r' } : {}), ...(blockMs > 0 ? { blockMs } : {}) });
          const spec = ruleSpec(rule);
          const back = ruleFromSpec(JSON.parse(JSON.stringify(spec)));
          expect([back.kind, back.name, back.planName, back.blockMs, back.stateFormat, back.wireParams]).toEqual([
            rule.kind,
            rule.name,
            rule.planName,
            rule.blockMs,
            rule.stateFormat,
            rule.wireParams,
          ]);
        },
      ),
    );
    expect(Object.keys(RULE_FACTORIES).sort()).toEqual([...ALGORITHM_KINDS].sort());
  });

  it('a rule counted against a scope function cannot be written down; a spec that is no rule is a typed error naming it', () => {
    const scoped = RULE_FACTORIES.tokenBucket({ capacity: 5, refillPerSecond: 1, scope: () => 'all' } as never);
    expect(() => ruleSpec(scoped)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
    const fixed = ruleSpec(RULE_FACTORIES.tokenBucket({ capacity: 5, refillPerSecond: 1, scope: 'all' } as never));
    expect(ruleFromSpec(fixed).scope).toBe('all');
    expect(() => ruleFromSpec(null)).toThrow(expect.objectContaining({ name: 'SluiceTypeError' }));
    expect(() => ruleFromSpec({ kind: 'leakyBuckett', params: {} })).toThrow(
      expect.objectContaining({ argument: 'kind', message: expect.stringContaining('leakyBuckett') }),
    );
    expect(() => ruleFromSpec({ kind: 'tokenBucket', params: { capacity: -1, refillPerSecond: 1 } })).toThrow(
      expect.objectContaining({ argument: 'capacity' }),
    );
  });

  it('a spec keeps the names it was first stored under (a rolling deploy reads it both ways); either name reads', () => {
    // As an earlier version wrote it, before gcra's rate, tokenBucket's initial and a rule's key were renamed.
    const stored = [
      { kind: 'gcra', name: 'g', named: true, blockMs: 0, key: 'all', params: { rate: 2, burst: 4 } },
      {
        kind: 'tokenBucket',
        name: 't',
        named: true,
        blockMs: 0,
        params: { capacity: 5, refillPerSecond: 1, initial: 2 },
      },
    ];
    const [gcra, bucket] = stored.map((spec) => ruleFromSpec(JSON.parse(JSON.stringify(spec))));
    expect([gcra?.scope, gcra?.params, bucket?.params]).toEqual([
      'all',
      { permitsPerSecond: 2, burst: 4 },
      { capacity: 5, refillPerSecond: 1, initialPermits: 2, maxDebt: 5 },
    ]);
    // Written again with the stored names, so a node of the earlier version reads what this one writes.
    expect(ruleSpec(gcra as never)).toEqual(stored[0]);
    expect(ruleSpec(bucket as never).params).toEqual({ ...stored[1]?.params, maxDebt: 5 });
    // The options' own names read too (the admin API's params); both names of one parameter are refused.
    const named = ruleFromSpec({ kind: 'gcra', name: 'g', named: true, params: { permitsPerSecond: 2, burst: 4 } });
    expect(named.wireParams).toEqual(gcra?.wireParams);
    expect(() => ruleFromSpec({ kind: 'gcra', params: { rate: 2, permitsPerSecond: 3, burst: 4 } })).toThrow(
      expect.objectContaining({ name: 'SluiceTypeError', argument: 'permitsPerSecond' }),
    );
  });
});
