import { inCall } from '../foundation/errors.js';
import { type Adjusted, type Algorithm, type Outcome, neverFits, outcome } from './algorithm.js';
import { type WindowOptions, windowOptions, windowRule } from './window-rule.js';

/** Options of `fixedWindow`: `limit` per aligned window of `windowMs`. */
export type FixedWindowOptions = WindowOptions;

/** A fixed window's state: the window it counts and its count. */
export interface FixedWindowState {
  /** Start of the window `count` belongs to. */
  readonly windowStart: number;
  readonly count: number;
}

/**
 * A fixed window's decision once the window is known (its start, its count, the time to its end): `permits`
 * granted while the count stays within `limit`. The one rule of fixedWindow and calendarWindow.
 */
export function countInWindow<S extends FixedWindowState>(
  state: S | undefined,
  limit: number,
  windowStart: number,
  count: number,
  resetAfterMs: number,
  permits: number,
): Outcome<FixedWindowState> {
  // A penalty may have taken the count past the limit: nothing is left, never less.
  const left = Math.max(0, limit - count);
  if (permits > limit) return neverFits(state, left, count > 0 ? resetAfterMs : 0, resetAfterMs);
  if (count + permits <= limit) {
    const next = { windowStart, count: count + permits };
    return outcome(true, next, limit - next.count, 0, resetAfterMs, 0, resetAfterMs);
  }
  return outcome(false, state, left, resetAfterMs, resetAfterMs, 0, resetAfterMs);
}

/**
 * At most `limit` permits per aligned window. Cheapest state of all, but a burst straddling a boundary can
 * pass 2 x limit within one window-long interval.
 *
 * @example
 * const perMinute = fixedWindow({ limit: 100, windowMs: 60_000 })
 */
export function fixedWindow(options: FixedWindowOptions): Algorithm<FixedWindowState> {
  return inCall('fixedWindow', () => {
    const parsed = windowOptions('fixedWindow', options, 'fw');
    const { limit, windowMs } = parsed;

    /**
     * The window `nowMs` counts in, and its count so far. Written into one object per rule (decisions are
     * synchronous), so a decision allocates nothing but the state it keeps.
     */
    const window = { start: 0, count: 0 };
    function current(state: FixedWindowState | undefined, nowMs: number): typeof window {
      window.start = Math.floor(nowMs / windowMs) * windowMs;
      window.count = 0;
      // A clock that stepped back stays in the stored window rather than opening an older one.
      if (state !== undefined && state.windowStart >= window.start) {
        window.start = state.windowStart;
        window.count = state.count;
      }
      return window;
    }

    function consume(state: FixedWindowState | undefined, nowMs: number, permits: number): Outcome<FixedWindowState> {
      // current() inlined: the hot path of the cheapest rule, where an object's writes and reads cost ~15%.
      let windowStart = Math.floor(nowMs / windowMs) * windowMs;
      let count = 0;
      if (state !== undefined && state.windowStart >= windowStart) {
        windowStart = state.windowStart;
        count = state.count;
      }
      return countInWindow(state, limit, windowStart, count, windowStart + windowMs - nowMs, permits);
    }

    // Only from the window the grant was counted in, while it is the stored one: once a new window opened,
    // taking from it would let that window pass more than its limit (when in doubt, keep the permits).
    function refund(
      state: FixedWindowState | undefined,
      nowMs: number,
      permits: number,
      grantedAtMs: number,
    ): Adjusted<FixedWindowState> {
      if (state === undefined) return { state, ttlMs: 0 };
      const { start: windowStart, count } = current(state, nowMs);
      const ttlMs = windowStart + windowMs - nowMs;
      const inWindow =
        Number.isNaN(grantedAtMs) || (grantedAtMs >= windowStart && grantedAtMs < windowStart + windowMs);
      if (windowStart !== state.windowStart || !inWindow) return { state, ttlMs };
      return { state: { windowStart, count: Math.max(0, count - permits) }, ttlMs };
    }

    function penalize(state: FixedWindowState | undefined, nowMs: number, permits: number): Adjusted<FixedWindowState> {
      const { start: windowStart, count } = current(state, nowMs);
      return { state: { windowStart, count: count + permits }, ttlMs: windowStart + windowMs - nowMs };
    }

    return windowRule('fixedWindow', parsed, {
      consume,
      refund,
      penalize,
      lease: 'fixed',
      make: fixedWindow,
      // Whole permits, rounded against the caller.
      rescale: (state, ratio) => ({ ...state, count: Math.ceil(state.count * ratio - 1e-9) }),
      usedAt: (state, nowMs) => current(state, nowMs).count,
    });
  });
}
