/**
 * The decide and adjust cases: random timelines of one rule of every kind, and of policies, each answer
 * compared with the reference engine's (every field) and its decision with core's memory store's.
 */
import type { Algorithm, RuleOptions } from '../../algorithms/algorithm.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { stateName } from '../../algorithms/rule-name.js';
import { MemoryStore } from '../../engine/memory-store.js';
import type { BoundStore, Permits } from '../../engine/store.js';
import { ManualClock } from '../../foundation/clock.js';
import type { Decision } from '../../foundation/decision.js';
import { atEach } from '../asks-at.js';
import { type Adjustment, type DecideAnswer, type EngineAsk, type EngineRules, isStale } from '../engine.js';
import { CONFORMANCE_KINDS, CONFORMANCE_RULES } from './conformance-rules.js';
import { type ConformanceRun, Timeline } from './conformance-run.js';
import type { Prng } from './prng.js';

/** 2026-01-01T00:00:00Z, plus a random part: calendar windows meet their bounds at random places. */
const EPOCH = 1_767_225_600_000;

/** Common options of a rule: its name, sometimes a ban of a second or more. */
function common(rng: Prng, name: string, bans: boolean): RuleOptions {
  return { name, ...(bans && rng.chance(0.3) ? { blockMs: rng.pick([1_000, 2_500]) } : {}) };
}

/** The decisions of the engine's answers (a stale answer fails: no version was named). */
function decisionsOf(run: ConformanceRun, answers: readonly DecideAnswer[]): readonly Decision[] {
  return answers.map((answer, i) => (isStale(answer) ? run.fail('decide', `answers[${i}]`, answer) : answer.decision));
}

/** What a timeline decides: a limiter's rules under a fresh prefix, and the memory store bound to them. */
interface Subject {
  readonly rules: EngineRules;
  readonly store: BoundStore;
  readonly clock: ManualClock;
}

function subject(run: ConformanceRun, rules: readonly Algorithm[]): Subject {
  const clock = new ManualClock(0);
  const prefix = run.prefix();
  const store = new MemoryStore({ clock }).bind({ rules, prefix });
  return { rules: { prefix, rules, states: rules.map(stateName) }, store, clock };
}

function permitsFor(rng: Prng, rules: readonly Algorithm[]): Permits {
  if (rules.length > 1 && rng.chance(0.3)) {
    // Each rule's own count; at least one of them 1 or more.
    const counts = Object.fromEntries(rules.map((rule) => [rule.name, rng.int(0, 2)]));
    counts[(rules[0] as Algorithm).name] = rng.int(1, 2);
    return counts;
  }
  return rng.pick([1, 1, 1, 2, 3, Math.max(1, Math.ceil((rules[0] as Algorithm).burst) + 1)]);
}

async function decideStep(
  run: ConformanceRun,
  s: Subject,
  rng: Prng,
  keys: readonly string[],
  at: number,
): Promise<void> {
  const asks: Omit<EngineAsk, 'at'>[] = Array.from({ length: rng.pick([1, 1, 2, 3]) }, () =>
    rng.chance(0.15)
      ? { key: rng.pick(keys), permits: 1, maxWaitMs: 0, peek: true }
      : {
          key: rng.pick(keys),
          permits: permitsFor(rng, s.rules.rules),
          maxWaitMs: rng.pick([0, 0, 0, 50, 1_000, Number.POSITIVE_INFINITY]),
          peek: false,
        },
  );
  const answer = await run.both('decide', (e) => e.decide(s.rules, atEach(asks, at)));
  const decisions = decisionsOf(run, answer);
  s.clock.set(at);
  for (const [i, ask] of asks.entries()) {
    const expected = ask.peek ? s.store.peek(ask.key) : s.store.consume(ask.key, ask.permits, ask.maxWaitMs);
    run.same(`decide: decisions[${i}].decision (core's memory store's)`, expected, decisions[i]);
  }
}

async function adjustStep(
  run: ConformanceRun,
  s: Subject,
  rng: Prng,
  keys: readonly string[],
  at: number,
): Promise<void> {
  const key = rng.pick(keys);
  const refundable = s.rules.rules.every((rule) => rule.scope !== undefined || rule.refundable);
  const op = rng.pick(['refund', 'penalize', 'reset', 'block', 'unblock'] as const);
  const store = s.store;
  s.clock.set(at);
  let adjustment: Adjustment;
  if (op === 'refund' && refundable) {
    const permits = rng.int(0, 2);
    const grantedMsAgo = rng.pick([Number.NaN, 0, 10, 500, 1_500, 70_000]);
    adjustment = { op, permits, grantedMsAgo };
    store.refund?.(key, permits, grantedMsAgo);
  } else if (op === 'penalize') {
    const permits = rng.int(0, 2);
    adjustment = { op, permits };
    store.penalize?.(key, permits);
  } else if (op === 'block') {
    const ms = rng.pick([1_000, 3_000]);
    adjustment = { op, ms };
    store.block?.(key, ms);
  } else if (op === 'unblock') {
    adjustment = { op };
    store.unblock?.(key);
  } else {
    adjustment = { op: 'reset' };
    store.reset(key);
  }
  await run.both(`adjust ${adjustment.op}`, (e) => e.adjust(s.rules, key, adjustment, at));
}

/** A random timeline of `rules`: decisions, and adjustments when `adjust`. */
async function timeline(run: ConformanceRun, rng: Prng, rules: readonly Algorithm[], adjust: boolean): Promise<void> {
  const s = subject(run, rules);
  const keys = ['alice', 'bob', 'carol:1'];
  const time = new Timeline(EPOCH + rng.int(0, 400) * 3_600_000);
  const span = Math.min(...rules.map((rule) => rule.windowMs));
  for (let step = 0; step < run.stepsPerCase; step++) {
    run.next();
    const at = time.advance(rng.pick([0, 1, 7, 100, Math.ceil(span / 4), span]));
    if (adjust && rng.chance(0.2)) await adjustStep(run, s, rng, keys, at);
    else await decideStep(run, s, rng, keys, at);
  }
}

/** One case per algorithm kind: a rule of random parameters, decided and adjusted. */
export const ruleCases = CONFORMANCE_KINDS.map((kind) => ({
  name: `decide ${kind}`,
  run: async (run: ConformanceRun): Promise<void> => {
    const rng = run.begin(`decide ${kind}`);
    const rule = CONFORMANCE_RULES[kind](rng, common(rng, 'r', true));
    await timeline(run, rng, [rule], true);
  },
}));

/** Policies of two or three rules, all or nothing, per-rule permits, rules counted against shared identities. */
export async function policyCase(run: ConformanceRun): Promise<void> {
  const rng = run.begin('policies');
  for (let p = 0; p < 3; p++) {
    const count = rng.int(2, 3);
    const rules = Array.from({ length: count }, (_, r) => {
      const kind = rng.pick(CONFORMANCE_KINDS);
      // A rule counted against every key, or against each key's tenant (such a rule bans no key).
      if (r > 0 && rng.chance(0.4) && run.promises.sharedIdentities)
        return CONFORMANCE_RULES[kind](rng, {
          ...common(rng, `r${r}`, false),
          scope: rng.chance(0.5) ? 'everyone' : (key: string) => `tenant:${key.length % 2}`,
        });
      const options = common(rng, `r${r}`, true);
      return CONFORMANCE_RULES[kind](rng, options);
    });
    await timeline(run, rng, rules, true);
  }
}

/**
 * A window rule's refund: a grant counted before the window began gives nothing back to this one; a grant of
 * this window does; a penalty denies; a reset forgets. Explicit answers, besides the reference's.
 */
export async function refundWindowCase(run: ConformanceRun): Promise<void> {
  run.begin('adjust window');
  const windowMs = 60_000;
  const s = subject(run, [fixedWindow({ limit: 3, windowMs, name: 'w' })]);
  const time = new Timeline(EPOCH + 30_000);
  const take = async (what: string, allowed: boolean): Promise<void> => {
    run.next();
    const answer = await run.both('decide', (e) =>
      e.decide(s.rules, atEach([{ key: 'k', permits: 1, maxWaitMs: 0, peek: false }], time.at)),
    );
    const decision = decisionsOf(run, answer)[0];
    run.expect(decision?.allowed === allowed, `decide ${what}: allowed`, allowed, decision?.allowed);
  };
  const adjust = async (adjustment: Adjustment): Promise<void> => {
    run.next();
    await run.both(`adjust ${adjustment.op}`, (e) => e.adjust(s.rules, 'k', adjustment, time.at));
  };
  // Into the next window, then its three permits.
  const start = Math.ceil(time.advance(windowMs) / windowMs) * windowMs;
  time.advance(start + 100 - time.at);
  for (let i = 0; i < 3; i++) await take(`grant ${i + 1} of 3`, true);
  time.advance(100);
  if (time.at - start >= windowMs) return;
  // Granted 1 ms before the window began: nothing back.
  await adjust({ op: 'refund', permits: 1, grantedMsAgo: time.at - start + 1 });
  await take('after a refund of a grant of the last window', false);
  await adjust({ op: 'refund', permits: 1, grantedMsAgo: time.at - start - 50 });
  await take('after a refund of a grant of this window', true);
  await adjust({ op: 'reset' });
  await adjust({ op: 'penalize', permits: 3 });
  await take('after a penalty of the whole limit', false);
  await adjust({ op: 'reset' });
  await take('after a reset', true);
}
