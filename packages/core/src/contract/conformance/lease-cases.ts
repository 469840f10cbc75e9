/**
 * The lease cases: random leases of every leasable kind compared with the reference, the hoarding cap, and a
 * window's leases never summing past its limit; lessees counted, and the register-false path; a lease handed
 * back into its own window only, and a reset that forgets the lessees.
 */
import type { Algorithm } from '../../algorithms/algorithm.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { stateName } from '../../algorithms/rule-name.js';
import { type Adjustment, type EngineRules, type LeaseAnswer, type LeaseAsk, isStale } from '../engine.js';
import { CONFORMANCE_KINDS, CONFORMANCE_RULES } from './conformance-rules.js';
import { type ConformanceRun, Timeline } from './conformance-run.js';

const EPOCH = 1_767_225_600_000;

function rulesOf(run: ConformanceRun, rule: Algorithm): EngineRules {
  return { prefix: run.prefix(), rules: [rule], states: [stateName(rule)] };
}

type Granted = Exclude<LeaseAnswer, { readonly stale: number }>;

async function lease(run: ConformanceRun, rules: EngineRules, ask: LeaseAsk, at: number): Promise<Granted> {
  const answer = await run.both('lease', (e) => e.lease(rules, ask, at));
  if (isStale(answer)) return run.fail('lease', 'a lease', answer);
  const rule = rules.rules[0] as Algorithm;
  run.expect(answer.granted >= 0 && answer.granted <= ask.want, 'lease: granted', `0 to ${ask.want}`, answer.granted);
  if (ask.hoardingDivisor !== undefined) {
    const cap = Math.max(1, Math.floor(rule.burst / (ask.hoardingDivisor * answer.lessees)));
    run.expect(answer.granted <= cap, 'lease: granted within the hoarding cap', `at most ${cap}`, answer.granted);
  }
  run.expect(answer.lessees >= 1 || !answer.registered, 'lease: lessees', 'at least 1', answer.lessees);
  return answer;
}

/** One case per kind a lease can take from: random nodes, wants, caps and registrations. */
export const leaseCases = CONFORMANCE_KINDS.map((kind) => ({
  name: `lease ${kind}`,
  run: async (run: ConformanceRun): Promise<void> => {
    const rng = run.begin(`lease ${kind}`);
    const rule = CONFORMANCE_RULES[kind](rng, { name: 'r' });
    if (rule.lease === undefined) return;
    const rules = rulesOf(run, rule);
    const time = new Timeline(EPOCH + rng.int(0, 400) * 3_600_000);
    const steps = Math.ceil(run.stepsPerCase / 2);
    for (let step = 0; step < steps; step++) {
      run.next();
      const at = time.advance(rng.pick([0, 1, 50, 300, Math.ceil(rule.windowMs / 3)]));
      const key = rng.pick(['x', 'y']);
      if (rule.refundable && rng.chance(0.15)) {
        // A node hands back what it did not spend.
        const permits = rng.int(1, 2);
        const ago = rng.pick([0, 100, Math.ceil(rule.windowMs / 2)]);
        const adjustment: Adjustment = rng.chance(0.5)
          ? { op: 'refund', permits, grantedMsAgo: ago }
          : { op: 'refund', permits, grantedAtMs: at - ago };
        await run.both('adjust refund', (e) => e.adjust(rules, key, adjustment, at));
        continue;
      }
      await lease(
        run,
        rules,
        {
          key,
          want: rng.int(1, Math.ceil(rule.burst) + 1),
          node: rng.pick(['n1', 'n2', 'n3']),
          liveMs: rng.pick([1_000, 3_000]),
          hoardingDivisor: rng.pick([undefined, 1, 2, 4]),
          register: rng.chance(0.7),
        },
        at,
      );
    }
  },
}));

/** A window's leases: what the fleet takes never sums past its limit; lessees counted; register false. */
export async function leaseWindowCase(run: ConformanceRun): Promise<void> {
  run.begin('lease window');
  const rules = rulesOf(run, fixedWindow({ limit: 10, windowMs: 3_600_000, name: 'w' }));
  const time = new Timeline(EPOCH + 60_000);
  const ask = (node: string, want: number, register = true, key = 'k'): LeaseAsk => ({
    key,
    want,
    node,
    liveMs: 600_000,
    hoardingDivisor: undefined,
    register,
  });
  let sum = 0;
  for (const [node, want] of [
    ['a', 4],
    ['b', 4],
    ['a', 4],
    ['b', 1],
  ] as const) {
    run.next();
    const answer = await lease(run, rules, ask(node, want), time.advance(10));
    sum += answer.granted;
    run.expect(sum <= 10, 'lease: permits leased in one window', 'at most 10', sum);
    run.expect(
      answer.lessees === (node === 'a' && sum <= 4 ? 1 : 2),
      'lease: lessees',
      node === 'a' && sum <= 4 ? 1 : 2,
      answer.lessees,
    );
  }
  run.expect(sum === 10, 'lease: the window leased whole', 10, sum);
  run.next();
  const counted = await lease(run, rules, ask('c', 1, false), time.advance(10));
  run.same(
    'lease (register false, lessees known)',
    { lessees: 2, registered: false, granted: 0 },
    {
      lessees: counted.lessees,
      registered: counted.registered,
      granted: counted.granted,
    },
  );
  run.expect(counted.retryMs > 0, 'lease: retryMs of an empty window', 'more than 0', counted.retryMs);
  run.next();
  const fresh = await lease(run, rules, ask('c', 1, false, 'fresh'), time.advance(10));
  run.same(
    'lease (register false, no lessee yet)',
    { lessees: 1, registered: true, granted: 1 },
    {
      lessees: fresh.lessees,
      registered: fresh.registered,
      granted: fresh.granted,
    },
  );
  // The hoarding cap: a burst of 10 over 2 lessees at divisor 2 is 2 a lease.
  for (const node of ['a', 'b']) {
    run.next();
    const capped = await lease(run, rules, { ...ask(node, 9, true, 'capped'), hoardingDivisor: 2 }, time.advance(10));
    run.expect(
      capped.granted === (node === 'a' ? 5 : 2),
      'lease: granted under the hoarding cap',
      node === 'a' ? 5 : 2,
      capped.granted,
    );
  }
}

/**
 * A lease handed back by the time it was leased at (its `decidedAtMs`, as a node knows it): into the window it
 * was leased in, never into a later one; a reset forgets the key's lessees with its state.
 */
export async function leaseHandBackCase(run: ConformanceRun): Promise<void> {
  run.begin('lease hand-back');
  const windowMs = 60_000;
  const rules = rulesOf(run, fixedWindow({ limit: 10, windowMs, name: 'w' }));
  const time = new Timeline(EPOCH + 30_000);
  const ask = (node: string, want: number): LeaseAsk => ({
    key: 'k',
    want,
    node,
    liveMs: 600_000,
    hoardingDivisor: undefined,
    register: true,
  });
  const handBack = async (permits: number, grantedAtMs: number): Promise<void> => {
    run.next();
    await run.both('adjust refund', (e) => e.adjust(rules, 'k', { op: 'refund', permits, grantedAtMs }, time.at));
  };
  const take = async (what: string, node: string, want: number, granted: number): Promise<Granted> => {
    run.next();
    const answer = await lease(run, rules, ask(node, want), time.at);
    run.expect(answer.granted === granted, `lease ${what}: granted`, granted, answer.granted);
    return answer;
  };
  // 100 ms into a window: its whole limit leased, 4 handed back, leased again by another node.
  const start = Math.ceil(time.advance(windowMs) / windowMs) * windowMs;
  time.advance(start + 100 - time.at);
  const first = await take('of a whole window', 'a', 10, 10);
  time.advance(50);
  await handBack(4, first.decidedAtMs);
  time.advance(10);
  const again = await take('after a hand-back of 4 in its window', 'b', 10, 4);
  run.expect(again.lessees === 2, 'lease: lessees', 2, again.lessees);
  // The next window, leased whole: a hand-back of the last window's lease gives it nothing.
  time.advance(start + windowMs + 100 - time.at);
  await take('of the next window', 'a', 10, 10);
  time.advance(10);
  await handBack(4, again.decidedAtMs);
  time.advance(10);
  await take("after a hand-back of the last window's lease", 'a', 1, 0);
  // A reset forgets the lessees with the state: the next lease counts its node alone.
  run.next();
  await run.both('adjust reset', (e) => e.adjust(rules, 'k', { op: 'reset' }, time.advance(10)));
  time.advance(10);
  const fresh = await take('after a reset', 'c', 1, 1);
  run.expect(fresh.lessees === 1, 'lease after a reset: lessees', 1, fresh.lessees);
}
