import { type Algorithm, type Outcome, neverFits, outcome } from './algorithm.js';
import { type WindowOptions, windowOptions, windowRule } from './window-rule.js';

export type SlidingWindowLogOptions = WindowOptions;

export interface SlidingWindowLogState {
  /** Flat, time-ordered pairs `[t0, permits0, t1, permits1, ...]` of grants still inside the window. */
  readonly entries: readonly number[];
}

/**
 * Exact: at most `limit` permits in every interval (t - windowMs, t]. Keeps one entry per distinct grant
 * time, so memory grows with the limit; prefer slidingWindowCounter for large limits.
 *
 * @example
 * const strict = slidingWindowLog({ limit: 10, windowMs: 1_000 })
 */
export function slidingWindowLog(options: SlidingWindowLogOptions): Algorithm<SlidingWindowLogState> {
  const parsed = windowOptions('slidingWindowLog', options, 'swl');
  const { limit, windowMs } = parsed;

  function consume(
    state: SlidingWindowLogState | undefined,
    nowMs: number,
    permits: number,
  ): Outcome<SlidingWindowLogState> {
    const entries = state?.entries ?? [];
    const n = entries.length;
    // Time never goes backwards past the newest grant, so a stepped-back clock cannot reopen the window.
    const now = n > 0 ? Math.max(nowMs, entries[n - 2] as number) : nowMs;
    // A grant leaves the window at t + windowMs; comparing that sum (not now - windowMs) makes a retry
    // at exactly now + retryAfterMs see the grant gone.
    let first = 0;
    while (first < n && (entries[first] as number) + windowMs <= now) first += 2;
    let used = 0;
    for (let i = first; i < n; i += 2) used += entries[i + 1] as number;
    const resetAfterMs = first < n ? (entries[n - 2] as number) + windowMs - nowMs : 0;

    if (permits > limit) return neverFits(state, limit - used, resetAfterMs, resetAfterMs);
    if (used + permits <= limit) {
      const live = entries.slice(first);
      if (live.length > 0 && live[live.length - 2] === now) live[live.length - 1] = (live[live.length - 1] as number) + permits;
      else live.push(now, permits);
      const ttlMs = now + windowMs - nowMs;
      return outcome(true, { entries: live }, limit - used - permits, 0, ttlMs, 0, ttlMs);
    }
    // Oldest grants leave first; the request fits once enough of them have left.
    const excess = used + permits - limit;
    let freed = 0;
    let i = first;
    while (freed < excess) {
      freed += entries[i + 1] as number;
      i += 2;
    }
    const retryAfterMs = (entries[i - 2] as number) + windowMs - nowMs;
    return outcome(false, state, limit - used, retryAfterMs, resetAfterMs, 0, resetAfterMs);
  }

  return windowRule('slidingWindowLog', parsed, consume, {
    // Each grant is an entry with its own time: a batch leased by one node cannot be split into them.
    lease: undefined,
    make: slidingWindowLog,
    // Entries are grants that happened; a smaller share sees them all (never refilled), a larger one too.
    rescale: (state) => state,
  });
}
