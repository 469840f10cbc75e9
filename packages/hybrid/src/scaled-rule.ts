import {
  type Algorithm,
  type FixedWindowState,
  type SlidingWindowCounterState,
  type TokenBucketState,
  fixedWindow,
  gcra,
  slidingWindowCounter,
  tokenBucket,
} from '@sluice/core';

/**
 * A rule scaled to a share of its limit: what one node enforces when the fleet's limit is divided.
 * Counts round down (never more than the share), but to at least 1, so a node can always admit something.
 */
export function scaledRule(rule: Algorithm, fraction: number): Algorithm {
  const p = rule.params as Record<string, number>;
  const count = (n: number) => Math.max(1, Math.floor(n * fraction + 1e-9));
  const name = rule.name;
  switch (rule.kind) {
    case 'tokenBucket': {
      const capacity = count(p['capacity'] as number);
      return tokenBucket({
        name,
        capacity,
        refillPerSecond: (p['refillPerSecond'] as number) * fraction,
        initial: Math.min(capacity, Math.floor((p['initial'] as number) * fraction + 1e-9)),
        maxDebt: Math.floor((p['maxDebt'] as number) * fraction + 1e-9),
      });
    }
    case 'gcra':
      return gcra({ name, rate: (p['rate'] as number) * fraction, burst: count(p['burst'] as number) });
    case 'fixedWindow':
      return fixedWindow({ name, limit: count(p['limit'] as number), windowMs: p['windowMs'] as number });
    case 'slidingWindowCounter':
      return slidingWindowCounter({ name, limit: count(p['limit'] as number), windowMs: p['windowMs'] as number });
    default:
      throw new Error(`unreachable: ${rule.kind} is not a hybrid rule`);
  }
}

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
