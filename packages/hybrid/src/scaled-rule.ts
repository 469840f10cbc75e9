import type { Algorithm, FixedWindowState, SlidingWindowCounterState, TokenBucketState } from '@sluice/core';

/**
 * Carries a key's state over to a new share: what it had used or stored is scaled by the ratio of the
 * shares, never refilled. (GCRA's state is time ahead, which the new interval already scales.)
 */
export function rescaleState(kind: Algorithm['kind'], state: unknown, ratio: number): unknown {
  if (state === undefined) return undefined;
  switch (kind) {
    case 'tokenBucket': {
      const s = state as TokenBucketState;
      return { ...s, tokens: s.tokens * ratio };
    }
    case 'fixedWindow': {
      const s = state as FixedWindowState;
      return { ...s, count: Math.ceil(s.count * ratio - 1e-9) }; // whole permits, rounded against the caller
    }
    case 'slidingWindowCounter': {
      const s = state as SlidingWindowCounterState;
      return { ...s, previous: s.previous * ratio, current: s.current * ratio };
    }
    default:
      return state;
  }
}
