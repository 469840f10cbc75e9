import type { Algorithm } from '@sluice/core';

/** A rule's sustained rate in permits per second (a window's limit over its length). */
export function ratePerSecond(rule: Algorithm): number {
  const p = rule.params as Record<string, number>;
  switch (rule.kind) {
    case 'tokenBucket':
      return p['refillPerSecond'] as number;
    case 'gcra':
      return p['rate'] as number;
    default:
      return (rule.limit * 1000) / rule.windowMs;
  }
}

/** The most permits the rule can grant at once: the burst a lease batch is carved from. */
export function burstOf(rule: Algorithm): number {
  const p = rule.params as Record<string, number>;
  return rule.kind === 'tokenBucket' ? (p['capacity'] as number) : rule.kind === 'gcra' ? (p['burst'] as number) : rule.limit;
}
