import { inCall } from '../foundation/errors.js';
import {
  type Adjusted,
  type Algorithm,
  type Outcome,
  EPSILON,
  TOLERANCE_MS,
  neverFits,
  outcome,
  wholePermits,
} from './algorithm.js';
import { type WindowOptions, windowOptions, windowRule } from './window-rule.js';

/** Options of `slidingWindowCounter`: `limit` per `windowMs`, weighted over two windows. */
export type SlidingWindowCounterOptions = WindowOptions;

/** A sliding window counter's state: the current window, its count and the previous window's. */
export interface SlidingWindowCounterState {
  readonly windowStart: number;
  /** Permits granted in the window before `windowStart`. */
  readonly previous: number;
  /** Permits granted in the window starting at `windowStart`. */
  readonly current: number;
}

/**
 * Two counters and a weighted estimate: previous x (1 - elapsed/windowMs) + current. Never more than
 * `limit` per aligned window; in a sliding interval it approximates the log (its error is measured in
 * the property tests) at the memory cost of a fixed window.
 *
 * @example
 * const perHour = slidingWindowCounter({ limit: 5_000, windowMs: 3_600_000 })
 */
export function slidingWindowCounter(options: SlidingWindowCounterOptions): Algorithm<SlidingWindowCounterState> {
  return inCall('slidingWindowCounter', () => {
    const parsed = windowOptions('slidingWindowCounter', options, 'swc');
    const { limit, windowMs } = parsed;

    /**
     * The state moved on to the window `nowMs` falls in (itself while that window lasts). It is decided at
     * max(nowMs, its windowStart): a clock that stepped back stays in the stored window.
     */
    function roll(state: SlidingWindowCounterState | undefined, nowMs: number): SlidingWindowCounterState {
      const windowStart = Math.floor(nowMs / windowMs) * windowMs;
      if (state !== undefined) {
        if (state.windowStart >= windowStart) return state;
        if (state.windowStart + windowMs === windowStart) return { windowStart, previous: state.current, current: 0 };
      }
      return { windowStart, previous: 0, current: 0 };
    }

    function consume(
      state: SlidingWindowCounterState | undefined,
      nowMs: number,
      permits: number,
    ): Outcome<SlidingWindowCounterState> {
      const { windowStart, previous, current } = roll(state, nowMs);
      const now = Math.max(nowMs, windowStart);
      const weight = 1 - (now - windowStart) / windowMs;
      const estimate = previous * weight + current;
      const windowEnd = windowStart + windowMs;
      const resetAfterMs = current > 0 ? windowEnd + windowMs - nowMs : previous > 0 ? windowEnd - nowMs : 0;

      if (permits > limit) return neverFits(state, wholePermits(limit - estimate), resetAfterMs, resetAfterMs);
      // The weight is derived from elapsed time, so it gets the same 1 us of slack as the buckets.
      if (estimate + permits <= limit + EPSILON + (previous * TOLERANCE_MS) / windowMs) {
        const next = { windowStart, previous, current: current + permits };
        const ttlMs = windowEnd + windowMs - nowMs;
        return outcome(true, next, wholePermits(limit - estimate - permits), 0, ttlMs, 0, ttlMs);
      }
      // Solve previous' x (1 - e / windowMs) + current' + permits = limit for the elapsed time e.
      let retryAt: number;
      if (current + permits <= limit) {
        retryAt = windowStart + windowMs * (1 - (limit - current - permits) / previous);
      } else {
        retryAt = windowEnd + windowMs * (1 - (limit - permits) / current);
      }
      return outcome(false, state, wholePermits(limit - estimate), retryAt - nowMs, resetAfterMs, 0, resetAfterMs);
    }

    // From the window the grant was counted in (the current or the previous one); with no grant time, the
    // newest first: the current window, then the previous.
    function refund(
      state: SlidingWindowCounterState | undefined,
      nowMs: number,
      permits: number,
      grantedAtMs: number,
    ): Adjusted<SlidingWindowCounterState> {
      if (state === undefined) return { state, ttlMs: 0 };
      const { windowStart, previous, current } = roll(state, nowMs);
      const ttlMs = windowStart + 2 * windowMs - nowMs;
      let fromCurrent = 0;
      let fromPrevious = 0;
      if (Number.isNaN(grantedAtMs)) {
        fromCurrent = Math.min(current, permits);
        fromPrevious = Math.min(previous, permits - fromCurrent);
      } else {
        const grantedWindow = Math.floor(grantedAtMs / windowMs) * windowMs;
        if (grantedWindow === windowStart) fromCurrent = Math.min(current, permits);
        else if (grantedWindow + windowMs === windowStart) fromPrevious = Math.min(previous, permits);
      }
      return { state: { windowStart, previous: previous - fromPrevious, current: current - fromCurrent }, ttlMs };
    }

    function penalize(
      state: SlidingWindowCounterState | undefined,
      nowMs: number,
      permits: number,
    ): Adjusted<SlidingWindowCounterState> {
      const { windowStart, previous, current } = roll(state, nowMs);
      return {
        state: { windowStart, previous, current: current + permits },
        ttlMs: windowStart + 2 * windowMs - nowMs,
      };
    }

    return windowRule('slidingWindowCounter', parsed, {
      consume,
      refund,
      penalize,
      lease: 'sliding',
      make: slidingWindowCounter,
      rescale: (state, ratio) => ({ ...state, previous: state.previous * ratio, current: state.current * ratio }),
      // The weighted estimate a decision compares with the limit.
      usedAt(state, nowMs) {
        const { windowStart, previous, current } = roll(state, nowMs);
        return previous * (1 - (Math.max(nowMs, windowStart) - windowStart) / windowMs) + current;
      },
    });
  });
}
