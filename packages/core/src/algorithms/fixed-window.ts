import { type Algorithm, type Outcome, neverFits, outcome } from './algorithm.js';
import { type WindowOptions, windowOptions, windowRule } from './window-rule.js';

export type FixedWindowOptions = WindowOptions;

export interface FixedWindowState {
  /** Start of the window `count` belongs to. */
  readonly windowStart: number;
  readonly count: number;
}

/**
 * At most `limit` permits per aligned window. Cheapest state of all, but a burst straddling a boundary can
 * pass 2 x limit within one window-long interval.
 *
 * @example
 * const perMinute = fixedWindow({ limit: 100, windowMs: 60_000 })
 */
export function fixedWindow(options: FixedWindowOptions): Algorithm<FixedWindowState> {
  const parsed = windowOptions('fixedWindow', options, 'fw');
  const { limit, windowMs } = parsed;

  function consume(
    state: FixedWindowState | undefined,
    nowMs: number,
    permits: number,
  ): Outcome<FixedWindowState> {
    let windowStart = Math.floor(nowMs / windowMs) * windowMs;
    let count = 0;
    // A clock that stepped back stays in the stored window rather than opening an older one.
    if (state !== undefined && state.windowStart >= windowStart) {
      windowStart = state.windowStart;
      count = state.count;
    }
    const resetAfterMs = windowStart + windowMs - nowMs;
    if (permits > limit) return neverFits(state, limit - count, count > 0 ? resetAfterMs : 0, resetAfterMs);
    if (count + permits <= limit) {
      const next = { windowStart, count: count + permits };
      return outcome(true, next, limit - next.count, 0, resetAfterMs, 0, resetAfterMs);
    }
    return outcome(false, state, limit - count, resetAfterMs, resetAfterMs, 0, resetAfterMs);
  }

  return windowRule('fixedWindow', parsed, consume, {
    lease: 'fixed',
    make: fixedWindow,
    // Whole permits, rounded against the caller.
    rescale: (state, ratio) => ({ ...state, count: Math.ceil(state.count * ratio - 1e-9) }),
  });
}
