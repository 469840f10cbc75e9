import type { Algorithm } from './algorithm.js';

/**
 * A rule scaled to a share of its limit: what one node enforces when a fleet's limit is divided among
 * nodes (divided mode, and a Redis store deciding by its local fail mode). See Algorithm.share.
 * @example
 * const share = scaledRule(rule, 1 / nodes) // this node's part of the limit
 */
export function scaledRule(rule: Algorithm, fraction: number): Algorithm {
  return fraction === 1 ? rule : rule.share(fraction);
}
