import type { Algorithm } from './algorithm.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { smoothBursty, smoothWarmingUp } from './smooth.js';
import { tokenBucket } from './token-bucket.js';

/**
 * A rule scaled to a share of its limit: what one node enforces when a fleet's limit is divided among
 * nodes (divided mode, and a Redis store deciding by its local fail mode). Counts round down, never more
 * than the share, but to at least 1, so a node can always admit something; rates scale exactly; windows,
 * burst spans and warm-up times stay. The scaled rule keeps the original's name and key.
 */
export function scaledRule(rule: Algorithm, fraction: number): Algorithm {
  if (fraction === 1) return rule;
  const p = rule.params as Record<string, number>;
  const count = (n: number) => Math.max(1, Math.floor(n * fraction + 1e-9));
  const rate = (n: number) => n * fraction;
  const own = { name: rule.name, ...(rule.key === undefined ? {} : { key: rule.key }) };
  switch (rule.kind) {
    case 'tokenBucket': {
      const capacity = count(p['capacity'] as number);
      return tokenBucket({
        ...own,
        capacity,
        refillPerSecond: rate(p['refillPerSecond'] as number),
        initial: Math.min(capacity, Math.floor((p['initial'] as number) * fraction + 1e-9)),
        maxDebt: Math.floor((p['maxDebt'] as number) * fraction + 1e-9),
      });
    }
    case 'gcra':
      return gcra({ ...own, rate: rate(p['rate'] as number), burst: count(p['burst'] as number) });
    case 'fixedWindow':
      return fixedWindow({ ...own, limit: count(p['limit'] as number), windowMs: p['windowMs'] as number });
    case 'slidingWindowLog':
      return slidingWindowLog({ ...own, limit: count(p['limit'] as number), windowMs: p['windowMs'] as number });
    case 'slidingWindowCounter':
      return slidingWindowCounter({ ...own, limit: count(p['limit'] as number), windowMs: p['windowMs'] as number });
    case 'leakyBucket':
      return leakyBucket({
        ...own,
        capacity: count(p['capacity'] as number),
        leakPerSecond: rate(p['leakPerSecond'] as number),
        mode: rule.params['mode'] as 'police' | 'shape',
      });
    case 'smoothBursty': {
      const maxBurstSeconds = p['maxBurstSeconds'] as number;
      const permitsPerSecond = rate(p['permitsPerSecond'] as number);
      return smoothBursty({
        ...own,
        permitsPerSecond,
        maxBurstSeconds,
        initialPermits: Math.min(permitsPerSecond * maxBurstSeconds, (p['initialPermits'] as number) * fraction),
      });
    }
    case 'smoothWarmingUp':
      return smoothWarmingUp({ ...own, permitsPerSecond: rate(p['permitsPerSecond'] as number), warmupMs: p['warmupMs'] as number, coldFactor: p['coldFactor'] as number });
  }
}
