import { inCall } from '../foundation/errors.js';
import { type Adjusted, type Algorithm, type Outcome, neverFits, outcome } from './algorithm.js';
import { type WindowOptions, windowOptions, windowRule } from './window-rule.js';

/** Options of `slidingWindowLog`: `limit` in every interval of `windowMs`. */
export type SlidingWindowLogOptions = WindowOptions;

/** A sliding window log's state: the grants still inside the window. */
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
  return inCall('slidingWindowLog', () => {
    const parsed = windowOptions('slidingWindowLog', options, 'swl');
    const { limit, windowMs } = parsed;

    /** Time never goes backwards past the newest grant, so a stepped-back clock cannot reopen the window. */
    function decisionTime(entries: readonly number[], nowMs: number): number {
      const n = entries.length;
      return n > 0 ? Math.max(nowMs, entries[n - 2] as number) : nowMs;
    }

    /**
     * The index of the first grant still inside the window at `now`. A grant leaves at t + windowMs; comparing
     * that sum (not now - windowMs) makes a retry at exactly now + retryAfterMs see the grant gone.
     */
    function firstLive(entries: readonly number[], now: number): number {
      let first = 0;
      while (first < entries.length && (entries[first] as number) + windowMs <= now) first += 2;
      return first;
    }

    /** The live entries with `permits` more granted at `now` (merged into the newest entry when it is at `now`). */
    function withGrant(entries: readonly number[], first: number, now: number, permits: number): number[] {
      const live = entries.slice(first);
      if (live.length > 0 && live[live.length - 2] === now)
        live[live.length - 1] = (live[live.length - 1] as number) + permits;
      else live.push(now, permits);
      return live;
    }

    function consume(
      state: SlidingWindowLogState | undefined,
      nowMs: number,
      permits: number,
    ): Outcome<SlidingWindowLogState> {
      const entries = state?.entries ?? [];
      const n = entries.length;
      const now = decisionTime(entries, nowMs);
      const first = firstLive(entries, now);
      let used = 0;
      for (let i = first; i < n; i += 2) used += entries[i + 1] as number;
      const resetAfterMs = first < n ? (entries[n - 2] as number) + windowMs - nowMs : 0;

      // A penalty may have logged more than the limit: nothing is left, never less.
      const left = Math.max(0, limit - used);
      if (permits > limit) return neverFits(state, left, resetAfterMs, resetAfterMs);
      if (used + permits <= limit) {
        const ttlMs = now + windowMs - nowMs;
        return outcome(
          true,
          { entries: withGrant(entries, first, now, permits) },
          limit - used - permits,
          0,
          ttlMs,
          0,
          ttlMs,
        );
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
      return outcome(false, state, left, retryAfterMs, resetAfterMs, 0, resetAfterMs);
    }

    // With a grant time, grants made since then, oldest first (the grant itself, when nothing shares its
    // instant): taking a later one would keep an earlier entry that leaves the window sooner. Once a window
    // has passed since that time, the grant may have left the log: what is newer was counted for other
    // calls, and taking it would pass the limit in windows the grant never counted in, so nothing is given
    // back (when in doubt, keep the permits). With no grant time, the newest grants.
    function refund(
      state: SlidingWindowLogState | undefined,
      nowMs: number,
      permits: number,
      grantedAtMs: number,
    ): Adjusted<SlidingWindowLogState> {
      if (state === undefined) return { state, ttlMs: 0 };
      const now = decisionTime(state.entries, nowMs);
      const live = state.entries.slice(firstLive(state.entries, now));
      let left = permits;
      if (Number.isNaN(grantedAtMs)) {
        for (let i = live.length - 2; i >= 0 && left > 0; i -= 2) left = take(live, i, left);
      } else if (grantedAtMs > now - windowMs) {
        for (let i = 0; i < live.length && left > 0; i += 2)
          if ((live[i] as number) >= grantedAtMs) left = take(live, i, left);
      }
      const kept: number[] = [];
      for (let i = 0; i < live.length; i += 2)
        if ((live[i + 1] as number) > 0) kept.push(live[i] as number, live[i + 1] as number);
      if (kept.length === 0) return { state: undefined, ttlMs: 0 };
      return { state: { entries: kept }, ttlMs: (kept[kept.length - 2] as number) + windowMs - nowMs };
    }

    function penalize(
      state: SlidingWindowLogState | undefined,
      nowMs: number,
      permits: number,
    ): Adjusted<SlidingWindowLogState> {
      const entries = state?.entries ?? [];
      const now = decisionTime(entries, nowMs);
      return {
        state: { entries: withGrant(entries, firstLive(entries, now), now, permits) },
        ttlMs: now + windowMs - nowMs,
      };
    }

    return windowRule('slidingWindowLog', parsed, {
      consume,
      refund,
      penalize,
      // Each grant is an entry with its own time: a batch leased by one node cannot be split into them.
      lease: undefined,
      make: slidingWindowLog,
      // Entries are grants that happened; a smaller share sees them all (never refilled), a larger one too.
      rescale: (state) => state,
      usedAt(state, nowMs) {
        const entries = state?.entries ?? [];
        let used = 0;
        for (let i = firstLive(entries, decisionTime(entries, nowMs)); i < entries.length; i += 2)
          used += entries[i + 1] as number;
        return used;
      },
    });
  });
}

/** Takes up to `left` permits from the entry at `i` of a flat [t, permits, ...] list; returns what is left to take. */
function take(entries: number[], i: number, left: number): number {
  const taken = Math.min(left, entries[i + 1] as number);
  entries[i + 1] = (entries[i + 1] as number) - taken;
  return left - taken;
}
