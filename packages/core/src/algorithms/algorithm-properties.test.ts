import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AlgorithmKind, TOLERANCE_MS } from './algorithm.js';
import { calendarWindow } from './calendar-window.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { smoothBursty, smoothWarmingUp } from './smooth.js';
import { tokenBucket } from './token-bucket.js';
import { ALGORITHM_KINDS, byKey, expectBucketBound, maxInInterval, runTimeline, timelineArb } from '@sluice/test-kit';

const RUNS = { numRuns: 150 };
const DAY_MS = 86_400_000;
/** Asia/Kolkata keeps +5:30 all year (no DST), so its days are fixed 24 h spans from 18:30 UTC. */
const KOLKATA_OFFSET_MS = 19_800_000;

/**
 * Each algorithm's invariant, by kind: typed by AlgorithmKind, so a new algorithm does not compile until its
 * invariant is here, and each runs as "<kind> properties".
 */
const PROPERTIES: { readonly [K in AlgorithmKind]: () => void } = {
  fixedWindow: () => {
    it('<= limit per aligned window, <= 2 x limit in any window-long interval', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 1, max: 5_000 }),
          fc.nat(),
          (limit, windowMs, seed) =>
            fc.assert(
              fc.property(timelineArb(windowMs, limit + 2), (events) => {
                const run = runTimeline(fixedWindow({ limit, windowMs }), events, {
                  startMs: seed,
                  neverFitsAbove: limit,
                });
                for (const list of byKey(run.admissions)) {
                  const perWindow = new Map<number, number>();
                  for (const a of list) {
                    const w = Math.floor(a.atMs / windowMs);
                    perWindow.set(w, (perWindow.get(w) ?? 0) + a.permits);
                  }
                  expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(limit);
                  expect(maxInInterval(list, windowMs, true)).toBeLessThanOrEqual(2 * limit);
                }
              }),
              { numRuns: 5 },
            ),
        ),
        { numRuns: 40 },
      );
    });
  },

  calendarWindow: () => {
    it('<= limit per local calendar day (Asia/Kolkata: midnight is 18:30 UTC), as a fixed day moved by the offset', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 20 }), timelineArb(3_600_000, 22), (limit, events) => {
          const run = runTimeline(calendarWindow({ limit, period: 'day', timeZone: 'Asia/Kolkata' }), events, {
            neverFitsAbove: limit,
          });
          for (const list of byKey(run.admissions)) {
            const perDay = new Map<number, number>();
            for (const a of list) {
              const day = Math.floor((a.atMs + KOLKATA_OFFSET_MS) / DAY_MS);
              perDay.set(day, (perDay.get(day) ?? 0) + a.permits);
            }
            expect(Math.max(...perDay.values())).toBeLessThanOrEqual(limit);
          }
          // A zone without DST: its days are fixed windows of 24 h moved by its offset, deciding the same.
          const shifted = runTimeline(fixedWindow({ limit, windowMs: DAY_MS }), events, { startMs: KOLKATA_OFFSET_MS });
          expect(run.admissions).toEqual(
            shifted.admissions.map((a) => ({
              ...a,
              atMs: a.atMs - KOLKATA_OFFSET_MS,
              decidedAtMs: a.decidedAtMs - KOLKATA_OFFSET_MS,
            })),
          );
        }),
        RUNS,
      );
    });

    it('a UTC day decides exactly as a fixed window of 24 h (both start at midnight UTC)', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 20 }), timelineArb(3_600_000, 22), (limit, events) => {
          const a = runTimeline(calendarWindow({ limit, period: 'day' }), events);
          const b = runTimeline(fixedWindow({ limit, windowMs: DAY_MS }), events);
          expect(a.admissions).toEqual(b.admissions);
        }),
        RUNS,
      );
    });
  },

  slidingWindowLog: () => {
    it('<= limit in every window-long interval (t - windowMs, t]', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 1, max: 5_000 }),
          timelineArb(3_000, 22),
          (limit, windowMs, events) => {
            const run = runTimeline(slidingWindowLog({ limit, windowMs }), events, { neverFitsAbove: limit });
            for (const list of byKey(run.admissions))
              expect(maxInInterval(list, windowMs, true)).toBeLessThanOrEqual(limit);
          },
        ),
        RUNS,
      );
    });
  },

  slidingWindowCounter: () => {
    it('<= limit per aligned window; its error against the exact log stays below limit in any window', () => {
      let worstRatio = 0;
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 1, max: 5_000 }),
          timelineArb(3_000, 22),
          (limit, windowMs, events) => {
            const run = runTimeline(slidingWindowCounter({ limit, windowMs }), events, { neverFitsAbove: limit });
            for (const list of byKey(run.admissions)) {
              const perWindow = new Map<number, number>();
              for (const a of list)
                perWindow.set(
                  Math.floor(a.atMs / windowMs),
                  (perWindow.get(Math.floor(a.atMs / windowMs)) ?? 0) + a.permits,
                );
              expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(limit);
              const sliding = maxInInterval(list, windowMs, true);
              worstRatio = Math.max(worstRatio, sliding / limit);
              expect(sliding).toBeLessThan(2 * limit);
            }
          },
        ),
        RUNS,
      );
      // The measured error: how far above the limit a sliding interval got (the log would give exactly 1).
      console.info(`slidingWindowCounter: worst admitted / limit over any sliding window = ${worstRatio.toFixed(3)}`);
    });
  },

  tokenBucket: () => {
    it('admits at most capacity + rate x T over any interval T (reservations counted when their wait ends)', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.double({ min: 0.05, max: 200, noNaN: true }),
          fc.integer({ min: 0, max: 25 }),
          timelineArb(2_000, 24, 3_000),
          (capacity, refillPerSecond, maxDebt, events) => {
            expectBucketBound(tokenBucket({ capacity, refillPerSecond, maxDebt }), capacity, refillPerSecond, events);
          },
        ),
        RUNS,
      );
    });

    it('with an initial fill below capacity, the first interval is bounded by initial + rate x T', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.double({ min: 0.05, max: 50, noNaN: true }),
          timelineArb(50, 5, 0, 40),
          (capacity, rate, events) => {
            const initial = Math.floor(capacity / 2);
            const algorithm = tokenBucket({ capacity, refillPerSecond: rate, initialPermits: initial, maxDebt: 0 });
            const run = runTimeline(algorithm, events);
            for (const [key, list] of byKey(run.admissions).map((l) => [l[0]!.key, l] as const)) {
              // From the key's first sight (granted or not), at most initial + what refilled since.
              const firstSeen = run.firstSeenMs.get(key)!;
              let sum = 0;
              for (const a of list) {
                sum += a.permits;
                expect(sum).toBeLessThanOrEqual(initial + (rate / 1000) * (a.atMs - firstSeen) + 1e-6);
              }
            }
          },
        ),
        RUNS,
      );
    });
  },

  leakyBucket: () => {
    it('police: admits at most capacity + leak x T over any interval T', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.double({ min: 0.05, max: 200, noNaN: true }),
          timelineArb(2_000, 24),
          (capacity, leakPerSecond, events) => {
            expectBucketBound(leakyBucket({ capacity, leakPerSecond }), capacity, leakPerSecond, events);
          },
        ),
        RUNS,
      );
    });

    it('shape: requests leave never faster than the leak rate, and the queue never exceeds capacity', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.double({ min: 0.05, max: 200, noNaN: true }),
          timelineArb(2_000, 24, 20_000),
          (capacity, leakPerSecond, events) => {
            const run = expectBucketBound(
              leakyBucket({ capacity, leakPerSecond, mode: 'shape' }),
              capacity,
              leakPerSecond,
              events,
            );
            const msPerPermit = 1000 / leakPerSecond;
            for (const list of byKey(run.admissions)) {
              // Consecutive departures are at least the previous request's permits / rate apart.
              for (let i = 1; i < list.length; i++) {
                const prev = list[i - 1]!;
                expect(list[i]!.atMs - prev.atMs).toBeGreaterThanOrEqual(prev.permits * msPerPermit - TOLERANCE_MS);
              }
              // Waiting time in the queue never exceeds what capacity permits take to leave.
              for (const a of list)
                expect(a.atMs - a.decidedAtMs).toBeLessThanOrEqual(capacity * msPerPermit + TOLERANCE_MS);
            }
          },
        ),
        RUNS,
      );
    });
  },

  gcra: () => {
    it('admits at most burst + rate x T over any interval T, as a token bucket would', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.double({ min: 0.05, max: 200, noNaN: true }),
          timelineArb(2_000, 24, 3_000),
          (burst, rate, events) => {
            expectBucketBound(gcra({ permitsPerSecond: rate, burst }), burst, rate, events);
          },
        ),
        RUNS,
      );
    });

    it('decides exactly as a token bucket of capacity burst (no debt allowed) when nobody waits', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 1, max: 100 }),
          timelineArb(2_000, 24),
          (burst, rate, events) => {
            const a = runTimeline(gcra({ permitsPerSecond: rate, burst }), events);
            const b = runTimeline(tokenBucket({ capacity: burst, refillPerSecond: rate, maxDebt: 0 }), events);
            expect(a.admissions.map((x) => x.decidedAtMs)).toEqual(b.admissions.map((x) => x.decidedAtMs));
          },
        ),
        RUNS,
      );
    });
  },

  smoothBursty: () => {
    it('granted over any interval <= stored burst + rate x T + the last grant (prepay)', () => {
      fc.assert(
        fc.property(
          fc.double({ min: 0.1, max: 100, noNaN: true }),
          fc.double({ min: 0, max: 3, noNaN: true }),
          timelineArb(3_000, 30, 5_000),
          (permitsPerSecond, maxBurstSeconds, events) => {
            const burst = permitsPerSecond * maxBurstSeconds;
            expectBucketBound(smoothBursty({ permitsPerSecond, maxBurstSeconds }), burst, permitsPerSecond, events, {
              prepay: true,
            });
          },
        ),
        RUNS,
      );
    });
  },

  smoothWarmingUp: () => {
    it('never faster than the stable rate (stored permits cost at least the stable interval), prepay aside', () => {
      fc.assert(
        fc.property(
          fc.double({ min: 0.1, max: 100, noNaN: true }),
          fc.integer({ min: 1, max: 10_000 }),
          fc.double({ min: 1, max: 10, noNaN: true }),
          timelineArb(3_000, 30, 5_000),
          (permitsPerSecond, warmupMs, coldFactor, events) => {
            // No burst at all: stored permits cost at least the stable interval.
            expectBucketBound(
              smoothWarmingUp({ permitsPerSecond, warmupMs, coldFactor }),
              0,
              permitsPerSecond,
              events,
              {
                prepay: true,
              },
            );
          },
        ),
        RUNS,
      );
    });

    it('the interval between grants falls from cold to stable over the warm-up', () => {
      fc.assert(
        fc.property(
          fc.double({ min: 0.5, max: 50, noNaN: true }),
          fc.integer({ min: 100, max: 10_000 }),
          fc.double({ min: 1, max: 10, noNaN: true }),
          (permitsPerSecond, warmupMs, coldFactor) => {
            const algorithm = smoothWarmingUp({ permitsPerSecond, warmupMs, coldFactor });
            const stable = 1000 / permitsPerSecond;
            let state = undefined as ReturnType<typeof algorithm.consume>['state'];
            let now = 0;
            const gaps: number[] = [];
            let last = 0;
            // A caller that always waits its turn, one permit at a time, from cold, until past every stored
            // permit (Guava's maxPermits is at most 1.5 x warmup x rate).
            const steps = Math.ceil((1.5 * warmupMs * permitsPerSecond) / 1000) + 20;
            for (let i = 0; i < steps; i++) {
              const o = algorithm.consume(state, now, 1, Infinity);
              state = o.state;
              now += o.waitMs;
              if (i > 0) gaps.push(now - last);
              last = now;
            }
            for (let i = 1; i < gaps.length; i++) expect(gaps[i]!).toBeLessThanOrEqual(gaps[i - 1]! + 1e-6);
            expect(gaps[0]!).toBeLessThanOrEqual(stable * coldFactor + 1e-6);
            for (const g of gaps) expect(g).toBeGreaterThanOrEqual(stable - 1e-6);
            expect(gaps[gaps.length - 1]!).toBeCloseTo(stable, 6);
            // Warming up takes the warm-up period (Guava: the area under the curve).
            const warmSpent = gaps.reduce((s, g) => s + (g > stable + 1e-6 ? g : 0), 0);
            expect(warmSpent).toBeLessThanOrEqual(warmupMs + stable * coldFactor + 1e-6);
          },
        ),
        { numRuns: 100 },
      );
    });
  },
};

for (const kind of ALGORITHM_KINDS) describe(`${kind} properties`, PROPERTIES[kind]);
