/** Generated request timelines, and the checks every algorithm keeps on them (the algorithm property suites). */
import fc from 'fast-check';
import type { Algorithm } from '@sluice/core';
import { type Outcome, TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

/** One request of a generated timeline. `dtMs` is the time since the previous request. */
export interface TimelineEvent {
  readonly dtMs: number;
  readonly key: number;
  readonly permits: number;
  readonly maxWaitMs: number;
}

/** A grant, at the time the caller may act on it (`now + waitMs`). */
export interface Admission {
  readonly atMs: number;
  readonly decidedAtMs: number;
  readonly key: number;
  readonly permits: number;
}

export interface TimelineRun {
  readonly admissions: Admission[];
  /** When each key was first asked for. */
  readonly firstSeenMs: Map<number, number>;
  readonly decisions: number;
  readonly denials: number;
}

/** Arbitrary timelines over a few keys: bursts (dt 0), gaps up to `maxGapMs`, permits up to `maxPermits`. */
export function timelineArb(
  maxGapMs: number,
  maxPermits: number,
  maxWaitMs = 0,
  length = 120,
): fc.Arbitrary<TimelineEvent[]> {
  const event = fc.record({
    dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: maxGapMs })),
    key: fc.integer({ min: 0, max: 2 }),
    permits: fc.oneof(
      { weight: 6, arbitrary: fc.constant(1) },
      { weight: 3, arbitrary: fc.integer({ min: 1, max: maxPermits }) },
    ),
    maxWaitMs: maxWaitMs > 0 ? fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxWaitMs })) : fc.constant(0),
  });
  // Timelines start near 0, mid-range, or at epoch-scale wall time with a fraction, where a double
  // carries only about 0.24 us of precision.
  const start = fc.oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 10_000_000 }),
    fc.double({ min: 1.7e12, max: 1.8e12, noNaN: true }),
  );
  return fc
    .tuple(start, fc.array(event, { minLength: 1, maxLength: length }))
    .map(([startMs, [first, ...rest]]) => [{ ...first!, dtMs: first!.dtMs + startMs }, ...rest]);
}

/**
 * Runs a timeline through a pure algorithm and checks, at every step, the rules every algorithm keeps:
 * a denial consumes nothing (its state is the one given, or an anchor that decides the same); retrying at
 * now + retryAfterMs succeeds if nothing else arrived; retrying a millisecond earlier fails; a request above
 * the limit is refused with Infinity.
 */
export function runTimeline<S>(
  algorithm: Algorithm<S>,
  events: readonly TimelineEvent[],
  options: { startMs?: number; neverFitsAbove?: number } = {},
): TimelineRun {
  const states = new Map<number, S | undefined>();
  const admissions: Admission[] = [];
  let now = options.startMs ?? 0;
  let denials = 0;
  const firstSeenMs = new Map<number, number>();
  for (const e of events) {
    now += e.dtMs;
    if (!firstSeenMs.has(e.key)) firstSeenMs.set(e.key, now);
    const before = states.get(e.key);
    const o: Outcome<S> = algorithm.consume(before, now, e.permits, e.maxWaitMs);
    if (options.neverFitsAbove !== undefined && e.permits > options.neverFitsAbove) {
      expectThat(!o.allowed && o.retryAfterMs === Infinity, 'a request above the limit is refused with Infinity', e, o);
    }
    if (o.allowed) {
      expectThat(o.waitMs >= 0 && o.waitMs <= Math.max(e.maxWaitMs, 0) + 1e-6, 'a grant waits at most maxWaitMs', e, o);
      expectThat(o.ttlMs >= 0, 'ttl is never negative', e, o);
      states.set(e.key, o.state);
      admissions.push({ atMs: now + o.waitMs, decidedAtMs: now, key: e.key, permits: e.permits });
      continue;
    }
    denials++;
    // A denial consumes nothing: its state is the one it was given, or (for a key never seen, or one the
    // algorithm forgot) an anchor that decides the same request the same way at the same instant.
    if (o.state !== before) {
      const again = algorithm.consume(o.state, now, e.permits, e.maxWaitMs);
      expectThat(
        !again.allowed && again.retryAfterMs === o.retryAfterMs && again.remaining === o.remaining,
        'a denial consumes nothing (an anchored state decides the same)',
        e,
        o,
      );
      states.set(e.key, o.state);
    }
    expectThat(o.retryAfterMs > 0, 'a denial has a positive retryAfterMs', e, o);
    if (Number.isFinite(o.retryAfterMs)) {
      const retry = algorithm.consume(o.state, now + o.retryAfterMs, e.permits, e.maxWaitMs);
      expectThat(retry.allowed, 'retry at now + retryAfterMs succeeds', e, o);
      if (o.retryAfterMs > 1) {
        const early = algorithm.consume(o.state, now + o.retryAfterMs - 1, e.permits, e.maxWaitMs);
        expectThat(!early.allowed, 'retry 1 ms before now + retryAfterMs fails', e, o);
      }
    }
  }
  return { admissions, firstSeenMs, decisions: events.length, denials };
}

function expectThat(ok: boolean, rule: string, event: TimelineEvent, o: Outcome<unknown>): void {
  if (!ok)
    throw new Error(`${rule}: event ${JSON.stringify(event)} gave ${JSON.stringify({ ...o, state: undefined })}`);
}

export function byKey(admissions: readonly Admission[]): Admission[][] {
  const groups = new Map<number, Admission[]>();
  for (const a of admissions) {
    const list = groups.get(a.key) ?? [];
    list.push(a);
    groups.set(a.key, list);
  }
  return [...groups.values()].map((list) => list.sort((x, y) => x.atMs - y.atMs));
}

/**
 * The largest admitted total over any interval of length `lengthMs`, right-closed (t - length, t]
 * when `open` is true (sliding windows), closed [t, t + length] otherwise (buckets).
 */
export function maxInInterval(admissions: readonly Admission[], lengthMs: number, open: boolean): number {
  let best = 0;
  for (let j = 0; j < admissions.length; j++) {
    const end = (admissions[j] as Admission).atMs;
    let sum = 0;
    for (let i = j; i >= 0; i--) {
      const a = admissions[i] as Admission;
      if (open ? a.atMs <= end - lengthMs : a.atMs < end - lengthMs) break;
      sum += a.permits;
    }
    best = Math.max(best, sum);
  }
  return best;
}

/**
 * Checks that, over every interval [a, b] between two admissions, the admitted permits stay within
 * `burst + ratePerMs * (b - a) + extra(last)`; returns the tightest slack seen (>= 0 when it holds).
 */
export function bucketSlack(
  admissions: readonly Admission[],
  burst: number,
  ratePerMs: number,
  extraForLast: (last: Admission) => number = () => 0,
): number {
  let slack = Infinity;
  for (let i = 0; i < admissions.length; i++) {
    let sum = 0;
    const start = (admissions[i] as Admission).atMs;
    for (let j = i; j < admissions.length; j++) {
      const a = admissions[j] as Admission;
      sum += a.permits;
      // Decisions are exact to TOLERANCE_MS of time (see algorithm.ts), so the bound gets that much time.
      const bound = burst + ratePerMs * (a.atMs - start + TOLERANCE_MS) + extraForLast(a) + 1e-6;
      slack = Math.min(slack, bound - sum);
    }
  }
  return slack;
}

/**
 * Runs `events` through a bucket-like algorithm and checks that every key's admissions stay within
 * burst + rate x T over any interval T. With `prepay` (Guava's smooth limiters) the last grant of an
 * interval may also run ahead, and large requests are reserved rather than refused above the burst.
 * Returns the run for further checks.
 */
export function expectBucketBound<S>(
  algorithm: Algorithm<S>,
  burst: number,
  ratePerSecond: number,
  events: readonly TimelineEvent[],
  { prepay = false }: { prepay?: boolean } = {},
): TimelineRun {
  const run = runTimeline(algorithm, events, prepay ? {} : { neverFitsAbove: burst });
  for (const list of byKey(run.admissions)) {
    const slack = bucketSlack(list, burst, ratePerSecond / 1000, prepay ? (last) => last.permits : undefined);
    if (slack < 0) throw new Error(`${algorithm.kind}: admitted ${-slack} permits above burst + rate x T`);
  }
  return run;
}

/** One step of a key's history: ms since the step before, permits, and whether they are a penalty (else a decision). */
export type HistoryStep = readonly [dtMs: number, permits: number, penalty: boolean];

/** A history's steps: up to `maxLength` of them, each up to `maxDtMs` after the one before and of 1..`maxPermits`. */
export function historyArb(maxLength: number, maxDtMs: number, maxPermits: number): fc.Arbitrary<HistoryStep[]> {
  return fc.array(
    fc.tuple(fc.integer({ min: 0, max: maxDtMs }), fc.integer({ min: 1, max: maxPermits }), fc.boolean()),
    { maxLength },
  );
}

/**
 * A key's state under `rule` after `steps` from `startMs` (decisions that are denied keep what the rule
 * keeps), and the time of the last step.
 * @example
 * const [state, at] = stateAfter(tokenBucket({ capacity: 10, refillPerSecond: 1 }), 0, [[0, 3, false]])
 */
export function stateAfter<S>(
  rule: Algorithm<S>,
  startMs: number,
  steps: readonly HistoryStep[],
): [S | undefined, number] {
  let state: S | undefined;
  let now = startMs;
  for (const [dt, permits, penalty] of steps) {
    now += dt;
    if (penalty) state = rule.penalize(state, now, permits).state;
    else {
      const o = rule.consume(state, now, permits, 0);
      if (o.state !== undefined) state = o.state;
    }
  }
  return [state, now];
}
