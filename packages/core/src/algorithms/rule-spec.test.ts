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

  it('a rule counted against a key function cannot be written down; a spec that is no rule is a typed error naming it', () => {
    const keyed = RULE_FACTORIES.tokenBucket({ capacity: 5, refillPerSecond: 1, key: () => 'all' } as never);
    expect(() => ruleSpec(keyed)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
    const fixed = ruleSpec(RULE_FACTORIES.tokenBucket({ capacity: 5, refillPerSecond: 1, key: 'all' } as never));
    expect(ruleFromSpec(fixed).key).toBe('all');
    expect(() => ruleFromSpec(null)).toThrow(expect.objectContaining({ name: 'SluiceTypeError' }));
    expect(() => ruleFromSpec({ kind: 'leakyBuckett', params: {} })).toThrow(
      expect.objectContaining({ argument: 'kind', message: expect.stringContaining('leakyBuckett') }),
    );
    expect(() => ruleFromSpec({ kind: 'tokenBucket', params: { capacity: -1, refillPerSecond: 1 } })).toThrow(
      expect.objectContaining({ argument: 'capacity' }),
    );
  });
});
