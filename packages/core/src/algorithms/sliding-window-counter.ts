import {
  type Algorithm,
  type Outcome,
  EPSILON,
  TOLERANCE_MS,
  neverFits,
  outcome,
  wholePermits,
} from './algorithm.js';
import { type WindowOptions, windowOptions, windowRule } from './window-rule.js';

export type SlidingWindowCounterOptions = WindowOptions;

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
  const parsed = windowOptions('slidingWindowCounter', options, 'swc');
  const { limit, windowMs } = parsed;

  function consume(
    state: SlidingWindowCounterState | undefined,
    nowMs: number,
    permits: number,
  ): Outcome<SlidingWindowCounterState> {
    let now = nowMs;
    let windowStart = Math.floor(now / windowMs) * windowMs;
    let previous = 0;
    let current = 0;
    if (state !== undefined) {
      if (state.windowStart >= windowStart) {
        // Same window, or a clock that stepped back: stay in the stored window.
        now = Math.max(now, state.windowStart);
        windowStart = state.windowStart;
        previous = state.previous;
        current = state.current;
      } else if (state.windowStart + windowMs === windowStart) {
        previous = state.current;
      }
    }
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

  return windowRule('slidingWindowCounter', parsed, consume, {
    lease: 'sliding',
    make: slidingWindowCounter,
    rescale: (state, ratio) => ({ ...state, previous: state.previous * ratio, current: state.current * ratio }),
  });
}
