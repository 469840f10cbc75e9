/**
 * Timelines of the controls (plans, bans, refunds, penalties) for the differential suite: generated limiters
 * and calls, run through a limiter on the memory store and one on Redis with the same ManualClock steps, so
 * every decision can be compared bit for bit (see controls-conformance.test.ts).
 */
import {
  type Algorithm,
  type Decision,
  tokenBucket,
  type Limiter,
  ManualClock,
  type Permits,
  createLimiter,
  memoryStore,
} from '@sluice/core';
import { shapeArb as registryShapes } from '@sluice/test-kit';
import fc from 'fast-check';
import { expect } from 'vitest';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';
import type { CentralStore } from './differential.js';

/** A limiter to build twice: its rules, or its plans. */
export type LimiterSpec = { readonly rules: Algorithm[] } | { readonly plans: Record<string, Algorithm[]> };

const blockMsArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant(0) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000 }) },
);

/** A rule shape (everything but the limit, so plans can hold one shape at several limits): every registered kind. */
const shapeArb = registryShapes();

const limitArb = fc.integer({ min: 1, max: 12 });

/** One rule, a policy of two (one may be shared by every key), or three plans over two rule shapes. */
export const limiterSpecArb: fc.Arbitrary<LimiterSpec> = fc.oneof(
  fc.tuple(shapeArb, limitArb, blockMsArb).map(([shape, limit, blockMs]) => ({ rules: [shape(limit, { blockMs })] })),
  fc.tuple(shapeArb, shapeArb, limitArb, limitArb, blockMsArb, fc.boolean()).map(([a, b, la, lb, blockMs, shared]) => ({
    rules: [
      a(la, { name: 'own', blockMs }),
      b(lb, shared ? { name: 'all', blockMs: 0, scope: 'all' } : { name: 'own2', blockMs: 0 }),
    ],
  })),
  fc
    .tuple(
      shapeArb,
      shapeArb,
      fc.array(fc.tuple(limitArb, limitArb, blockMsArb, fc.constantFrom<'a' | 'b' | 'ab'>('a', 'b', 'ab')), {
        minLength: 2,
        maxLength: 3,
      }),
    )
    .map(([a, b, plans]) => ({
      plans: Object.fromEntries(
        plans.map(([la, lb, blockMs, which], i) => {
          const rules: Algorithm[] = [];
          if (which.includes('a')) rules.push(a(la, { name: 'a', blockMs }));
          if (which.includes('b')) rules.push(b(lb, { name: 'b', blockMs: 0 }));
          return [`p${i}`, rules];
        }),
      ),
    })),
);

/** One call of a timeline. */
export interface ControlCall {
  readonly op: 'consume' | 'peek' | 'refund' | 'penalize' | 'block' | 'unblock' | 'reset';
  readonly key: string;
  readonly permits: number;
  /** Per-rule permits instead of `permits`: the first count for the first rule of the call's plan, and so on. */
  readonly rulePermits: readonly number[] | undefined;
  /** A plan index (taken modulo the limiter's plans); ignored without plans. */
  readonly plan: number;
  /** For a refund: which earlier consume of this timeline it refers to (from the newest), or none. */
  readonly grant: number | undefined;
  /** For block. */
  readonly ms: number;
}

export interface ControlStep {
  readonly dtMs: number;
  readonly calls: readonly ControlCall[];
}

const callArb: fc.Arbitrary<ControlCall> = fc.record({
  op: fc.oneof(
    { weight: 8, arbitrary: fc.constant('consume' as const) },
    { weight: 1, arbitrary: fc.constant('peek' as const) },
    { weight: 2, arbitrary: fc.constant('refund' as const) },
    { weight: 2, arbitrary: fc.constant('penalize' as const) },
    { weight: 1, arbitrary: fc.constantFrom('block' as const, 'unblock' as const, 'reset' as const) },
  ),
  key: fc.constantFrom('a', 'b', 'c{1}'),
  permits: fc.oneof(
    { weight: 4, arbitrary: fc.constant(1) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 15 }) },
  ),
  rulePermits: fc.option(fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 2, maxLength: 2 }), {
    nil: undefined,
    freq: 3,
  }),
  plan: fc.nat({ max: 5 }),
  grant: fc.option(fc.nat({ max: 4 }), { nil: undefined }),
  ms: fc.integer({ min: 1, max: 8_000 }),
});

export const controlTimelineArb: fc.Arbitrary<ControlStep[]> = fc.array(
  fc.record({
    dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 5_000 })),
    calls: fc.array(callArb, { minLength: 1, maxLength: 4 }),
  }),
  { minLength: 1, maxLength: 35 },
);

/** What one call produced: a decision (a consume, a peek, or the peek that follows a control), or its error code. */
export type Outcome = Decision | { readonly error: string };

function build(spec: LimiterSpec, store: Parameters<typeof createLimiter>[0]['store'], prefix: string): Limiter {
  return 'plans' in spec
    ? createLimiter({ plans: spec.plans, store, prefix })
    : createLimiter({ rules: spec.rules, store, prefix });
}

let run = 0;

/**
 * Runs one timeline through a limiter on the memory store and one on a central store (`central`: onRedis(redis),
 * postgresStore; client ManualClock each,
 * moved in step). Consumes and peeks at one instant go to Redis together, as one batch, until a control
 * call (awaited on its own) or a call under another plan; the memory store takes every call one by one. After each control, both
 * sides peek the key, so what it changed is compared too.
 */
export async function controlsBoth(
  central: CentralStore,
  spec: LimiterSpec,
  startMs: number,
  steps: readonly ControlStep[],
  denyCache: boolean,
): Promise<{ memory: Outcome[]; redis: Outcome[] }> {
  const prefix = `ctl${++run}`;
  const memClock = new ManualClock(startMs);
  const redisClock = new ManualClock(startMs);
  const store = central({ clock: redisClock, denyCache });
  const sides = [
    {
      clock: memClock,
      limiter: build(spec, memoryStore({ clock: memClock }), prefix),
      out: [] as Outcome[],
      batches: false,
    },
    { clock: redisClock, limiter: build(spec, store, prefix), out: [] as Outcome[], batches: true },
  ];
  const plans = 'plans' in spec ? Object.keys(spec.plans) : undefined;
  const ruleNames = (plan: string | undefined) =>
    ('plans' in spec ? (spec.plans[plan as string] as Algorithm[]) : spec.rules).map((rule) => rule.name);
  /** What a call asks: its count, or its per-rule permits by the names of its plan's rules. */
  const permitsOf = (call: ControlCall, plan: string | undefined, least: number): Permits =>
    call.rulePermits === undefined
      ? Math.max(least, call.permits)
      : Object.fromEntries(ruleNames(plan).map((name, r) => [name, call.rulePermits?.[r] ?? 0]));
  const grants: number[] = [];
  const settle = async (p: Promise<Decision>): Promise<Outcome> =>
    p.catch((e: { code?: string }) => ({ error: String(e.code) }));
  try {
    for (const step of steps) {
      for (const side of sides) side.clock.advance(step.dtMs);
      const now = memClock.now();
      for (const side of sides) {
        let batch: Promise<Outcome>[] = [];
        // Each plan is a binding of its own, whose batch leaves on its own: one batch holds one plan's calls.
        let batchPlan: string | undefined;
        const flush = async () => {
          side.out.push(...(await Promise.all(batch)));
          batch = [];
        };
        for (const call of step.calls) {
          const plan = plans === undefined ? undefined : (plans[call.plan % plans.length] as string);
          const options = plan === undefined ? {} : { plan };
          const l = side.limiter;
          if (call.op === 'consume' || call.op === 'peek') {
            if (plan !== batchPlan) await flush();
            batchPlan = plan;
            const decided = settle(
              call.op === 'consume'
                ? l.tryAcquire(call.key, { ...options, permits: permitsOf(call, plan, 1) })
                : l.peek(call.key, options),
            );
            // The memory store takes each call to its end before the next.
            if (side.batches) batch.push(decided);
            else side.out.push(await decided);
          } else {
            await flush();
            const grantedAt = call.grant === undefined ? undefined : grants[grants.length - 1 - call.grant];
            const control = async (): Promise<unknown> => {
              switch (call.op) {
                case 'refund':
                  return l.refund(call.key, permitsOf(call, plan, 0), {
                    ...options,
                    ...(grantedAt === undefined ? {} : { grantedMsAgo: now - grantedAt }),
                  });
                case 'penalize':
                  return l.penalize(call.key, permitsOf(call, plan, 0), options);
                case 'block':
                  return l.block(call.key, call.ms);
                case 'unblock':
                  return l.unblock(call.key);
                default:
                  return l.reset(call.key);
              }
            };
            const failed = await control().then(
              () => undefined,
              (e: { code?: string }) => ({ error: String(e.code) }),
            );
            side.out.push(failed ?? (await settle(l.peek(call.key, options))));
          }
        }
        await flush();
      }
      if (step.calls.some((c) => c.op === 'consume')) grants.push(now);
    }
  } finally {
    for (const side of sides) await side.limiter.close();
    await store.close();
  }
  return { memory: sides[0]?.out ?? [], redis: sides[1]?.out ?? [] };
}

/** Equal outcomes: bit for bit, or with the deny cache (which recomputes instants from local time) times to 1 us. */
export function sameOutcome(a: Outcome, b: Outcome | undefined, toleranceMs: number): boolean {
  if (b === undefined) return false;
  if (toleranceMs === 0 || 'error' in a || 'error' in b) return JSON.stringify(a) === JSON.stringify(b);
  const close = (x: number, y: number) => x === y || Math.abs(x - y) <= toleranceMs;
  const { retryAfterMs: ra, resetAfterMs: rs, waitMs: wa, ...restA } = a as Decision;
  const { retryAfterMs: rb, resetAfterMs: rt, waitMs: wb, ...restB } = b as Decision;
  return close(ra, rb) && close(rs, rt) && close(wa, wb) && JSON.stringify(restA) === JSON.stringify(restB);
}

/** A limiter spec as text: each rule's kind, name, parameters, blockMs and scope. */
export function describeSpec(spec: LimiterSpec): string {
  const rules = (list: readonly Algorithm[]) =>
    list.map((r) => ({ kind: r.kind, name: r.name, params: r.params, blockMs: r.blockMs, scope: r.scope }));
  return JSON.stringify(
    'plans' in spec
      ? Object.fromEntries(Object.entries(spec.plans).map(([plan, list]) => [plan, rules(list)]))
      : rules(spec.rules),
  );
}

/**
 * Counterexamples the generator found once its buckets could start part-filled (`initialPermits` below capacity), kept
 * as fixed cases: each differed between memory and Redis before its fix.
 */
export const FOUND_CONTROL_CASES: ReadonlyArray<{
  name: string;
  spec: LimiterSpec;
  start: number;
  steps: ControlStep[];
}> = [
  {
    // Redis deleted the state a refusing rule of a smaller plan took as forgotten (4 tokens read at capacity 1):
    // a denial deletes nothing now, and tokens above a plan's capacity are capped, not forgotten.
    name: "a smaller plan's denial leaves a larger plan's bucket as it was",
    spec: {
      plans: {
        p0: [
          tokenBucket({ name: 'a', capacity: 11, refillPerSecond: 0.55, initialPermits: 0, maxDebt: 22 }),
          tokenBucket({ name: 'b', capacity: 1, refillPerSecond: 0.05, initialPermits: 0, maxDebt: 2 }),
        ],
        p1: [tokenBucket({ name: 'b', capacity: 4, refillPerSecond: 0.2, initialPermits: 0, maxDebt: 2 })],
      },
    },
    start: 0,
    steps: [
      { dtMs: 36, calls: [call('consume', 'b', 1, 1), call('refund', 'b', 1, 2)] },
      { dtMs: 0, calls: [call('refund', 'c{1}', 1, 1), call('refund', 'b', 10, 5)] },
      { dtMs: 6, calls: [call('consume', 'b', 4, 4), call('penalize', 'b', 1, 5), call('consume', 'a', 1, 4)] },
    ],
  },
  {
    // The deny cache answered "1 ms" for a banned key whose part-filled bucket was forgotten when the ban ended
    // (its tokens dropped back to initialPermits): such a bucket's denials are not cached now.
    name: 'a part-filled bucket forgotten as its ban ends: no cached denial stands for it',
    spec: {
      rules: [
        tokenBucket({ capacity: 1, refillPerSecond: 0.5277044854881267, initialPermits: 0, maxDebt: 0, blockMs: 3421 }),
      ],
    },
    start: 1_700_000_000_000,
    steps: [
      { dtMs: 0, calls: [call('penalize', 'a', 4)] },
      { dtMs: 1839, calls: [{ ...call('block', 'a', 1), ms: 1 }] },
      { dtMs: 3901, calls: [call('peek', 'a', 1)] },
      { dtMs: 2210, calls: [call('consume', 'a', 1)] },
      { dtMs: 3402, calls: [call('peek', 'a', 1)] },
      { dtMs: 18, calls: [call('consume', 'a', 1)] },
      { dtMs: 0, calls: [call('consume', 'a', 1)] },
    ],
  },
];

/** One call of a fixed timeline. */
function call(op: ControlStep['calls'][number]['op'], key: string, permits: number, plan = 0) {
  return { op, key, permits, plan, grant: undefined, rulePermits: undefined, ms: 1 };
}

/** Fails with the first outcome that differs (the limiter and the timeline printed), or when one side has more. */
export function expectSameOutcomes(
  spec: LimiterSpec,
  steps: readonly ControlStep[],
  memory: readonly Outcome[],
  central: readonly Outcome[],
  denyCache: boolean,
): void {
  const at = memory.findIndex((m, i) => !sameOutcome(m, central[i], denyCache ? TOLERANCE_MS : 0));
  if (at !== -1) {
    console.error(
      `first difference at outcome ${at}: ${describeSpec(spec)}\n${JSON.stringify(steps)}\nmemory: ` +
        `${JSON.stringify(memory[at])}\ncentral: ${JSON.stringify(central[at])}`,
    );
    expect({ at, central: central[at] }).toEqual({ at, central: memory[at] });
  }
  expect(central).toHaveLength(memory.length);
}
