/**
 * The input case: every method, given a bad input, rejects (never throws) with a typed error, and changes
 * nothing (a batch with one bad ask decides none of it).
 */
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { stateName } from '../../algorithms/rule-name.js';
import { atEach } from '../asks-at.js';
import { type Engine, type EngineRules, isStale } from '../engine.js';
import type { ConformanceRun } from './conformance-run.js';
import { beatOf } from './heartbeats.js';

const TYPED = new Set(['SluiceTypeError', 'SluiceRangeError']);

export async function inputCase(run: ConformanceRun): Promise<void> {
  run.begin('input');
  const rule = fixedWindow({ limit: 1, windowMs: 3_600_000, name: 'i' });
  const rules: EngineRules = { prefix: run.prefix(), rules: [rule], states: [stateName(rule)] };
  const good = { key: 'k', permits: 1, maxWaitMs: 0, peek: false };
  const at = 1_767_225_600_000;
  const beat = beatOf(rules.prefix, { demand: 0 });
  const bad: [string, (e: Engine) => Promise<unknown>][] = [
    [
      'decide (an ask of 0 permits after a good one)',
      (e) => e.decide(rules, atEach([good, { ...good, permits: 0 }], at)),
    ],
    ['decide (a time of NaN)', (e) => e.decide(rules, atEach([good], Number.NaN))],
    ['decide (no prefix)', (e) => e.decide({ ...rules, prefix: 42 as never }, atEach([good], at))],
    ['adjust (an unknown op)', (e) => e.adjust(rules, 'k', { op: 'forget' } as never, at)],
    ['adjust (a penalty of -1)', (e) => e.adjust(rules, 'k', { op: 'penalize', permits: -1 }, at)],
    [
      'adjust (a refund that says when twice)',
      (e) => e.adjust(rules, 'k', { op: 'refund', permits: 1, grantedMsAgo: 0, grantedAtMs: at } as never, at),
    ],
    [
      'adjust (a refund granted at NaN)',
      (e) => e.adjust(rules, 'k', { op: 'refund', permits: 1, grantedAtMs: Number.NaN }, at),
    ],
    [
      'lease (want 0)',
      (e) =>
        e.lease(rules, { key: 'k', want: 0, node: 'n', liveMs: 1_000, hoardingDivisor: undefined, register: true }, at),
    ],
    ['heartbeat (a division of "fair")', (e) => e.heartbeat({ ...beat, division: 'fair' as never }, at)],
    ['readConfig (a number prefix)', (e) => e.readConfig(7 as never)],
    ['writeConfig (expected 0)', (e) => e.writeConfig(rules.prefix, 0, { version: 2, text: '' })],
    ['publish (a number message)', (e) => e.publish('c', 7 as never)],
    ['subscribe (no listener)', (e) => e.subscribe('c', undefined as never)],
  ];
  for (const [what, call] of bad) {
    run.next();
    let outcome: unknown;
    try {
      const promise = call(run.engine);
      outcome = await promise.then(
        (answer) => ({ answered: answer }),
        (error: unknown) => error,
      );
    } catch (error) {
      run.fail(what, 'a rejected promise', `a synchronous throw (${String(error)})`);
    }
    const name = outcome instanceof Error ? outcome.name : undefined;
    run.expect(
      name !== undefined && TYPED.has(name),
      what,
      'a rejection with SluiceTypeError or SluiceRangeError',
      outcome,
    );
  }
  // The batch with a bad ask decided nothing: the key's one permit is still there.
  run.next();
  const answer = await run.answer('decide', (e) => e.decide(rules, atEach([good], at)));
  const first = answer[0];
  const allowed = first !== undefined && !isStale(first) && first.decision.allowed;
  run.expect(allowed === true, 'decide after refused batches: allowed', true, allowed);
}
