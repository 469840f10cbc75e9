/**
 * The carry cases: for each algorithm kind, keys decided under a rule, the rule changed (once or twice, by
 * random modes), the keys' states carried by `adjust` and decided under the new rules, compared with the
 * reference at every step; a key that already holds a state under the new rule keeps it.
 */
import type { Algorithm } from '../../algorithms/algorithm.js';
import { CARRY_MODES } from '../../algorithms/carry.js';
import { stateName } from '../../algorithms/rule-name.js';
import { atEach } from '../asks-at.js';
import type { Adjustment, EngineRules } from '../engine.js';
import { CONFORMANCE_KINDS, CONFORMANCE_RULES } from './conformance-rules.js';
import { type ConformanceRun, Timeline } from './conformance-run.js';

const EPOCH = 1_767_225_600_000;

export const carryCases = CONFORMANCE_KINDS.map((kind) => ({
  name: `carry ${kind}`,
  run: async (run: ConformanceRun): Promise<void> => {
    const rng = run.begin(`carry ${kind}`);
    const prefix = run.prefix();
    // Three generations of one rule (its name kept, its parameters changed), each under a state name of its own.
    const generations = [1, 2, 3].map((g) => {
      const rule: Algorithm = CONFORMANCE_RULES[kind](rng, { name: 'c' });
      return { rule, state: `${stateName(rule)}~g${g}` };
    });
    const rulesOf = (g: number): EngineRules => {
      const { rule, state } = generations[g] as { rule: Algorithm; state: string };
      return { prefix, rules: [rule], states: [state] };
    };
    const time = new Timeline(EPOCH + rng.int(0, 400) * 3_600_000);
    const keys = ['a', 'b', 'c', 'd'];
    const decide = async (g: number, key: string, permits: number): Promise<void> => {
      run.next();
      await run.both(`decide under generation ${g + 1}`, (e) =>
        e.decide(rulesOf(g), atEach([{ key, permits, maxWaitMs: 0, peek: false }], time.at)),
      );
    };
    const spend = async (g: number): Promise<void> => {
      for (const key of keys)
        for (let i = rng.int(0, 3); i > 0; i--) {
          time.advance(rng.pick([0, 1, 50, 300]));
          await decide(g, key, rng.int(1, 2));
        }
    };
    await spend(0);
    const modes = [rng.pick(CARRY_MODES), rng.pick(CARRY_MODES)];
    // Generation 2: one key decided under it first (it keeps its own state); the others carried.
    time.advance(rng.pick([0, 10, 500]));
    await decide(1, 'd', 1);
    const carry = async (g: number): Promise<void> => {
      // Newest earlier generation first, each with the mode of the change from it to the next.
      const from = [];
      for (let e = g - 1; e >= 0; e--) {
        const { rule, state } = generations[e] as { rule: Algorithm; state: string };
        from.push({ rule, state, mode: modes[e] as (typeof modes)[number] });
      }
      const adjustment: Adjustment = { op: 'carry', links: [{ rule: 0, from }] };
      for (const key of keys) {
        run.next();
        await run.both(`adjust carry to generation ${g + 1}`, (e) => e.adjust(rulesOf(g), key, adjustment, time.at));
      }
    };
    if (rng.chance(0.5)) {
      await carry(1);
      await spend(1);
      time.advance(rng.pick([0, 10, 500]));
      await carry(2);
      await spend(2);
    } else {
      // Changed twice before a key is touched: the carry goes through both changes.
      await carry(2);
      await spend(2);
    }
    // A second carry finds the states carried: nothing moves.
    await carry(2);
    for (const key of keys) await decide(2, key, 1);
  },
}));
