import { SluiceRangeError, SluiceTypeError } from '@sluice/core';
import { describeValue, positiveFinite } from '@sluice/core/store-kit';
import type { FleetSummary } from './membership.js';

/** How a divided limit is split among live nodes. */
export type ShareMode = 'equal' | 'demand';

/** One live node of a divided limiter, as its heartbeat reported it. */
export interface NodeDemand {
  readonly id: string;
  /** Recent demand, in permits per second (what it asked for, granted or not). */
  readonly demand: number;
}

/**
 * Each node's fraction of the limit (they sum to 1). `'equal'`: 1/N each. `'demand'`: max-min fair shares
 * of the reported demand (water-filling): a node asking less than an equal split gets what it asks, the rest
 * is split among the busier ones; capacity nobody asked for is split equally, so a node whose traffic grows
 * has room before its next heartbeat. Every node counts as asking at least a tenth of an equal split, so
 * an idle node is never held at zero until its next heartbeat.
 * @example
 * divideShares('demand', [{ id: 'a', demand: 900 }, { id: 'b', demand: 100 }], 1000) // Map { a => 0.9, b => 0.1 }
 */
export function divideShares(
  mode: ShareMode,
  nodes: readonly NodeDemand[],
  limitPerSecond: number,
): Map<string, number> {
  if (mode !== 'equal' && mode !== 'demand')
    throw new SluiceRangeError('mode', mode, `mode must be 'equal' or 'demand', got ${describeValue(mode)}`);
  if (!Array.isArray(nodes))
    throw new SluiceTypeError('nodes', nodes, `nodes must be an array of { id, demand }, got ${describeValue(nodes)}`);
  positiveFinite('limitPerSecond', limitPerSecond);
  const shares = new Map<string, number>();
  const n = nodes.length;
  if (n === 0) return shares;
  if (mode === 'equal') {
    for (const node of nodes) shares.set(node.id, 1 / n);
    return shares;
  }
  const floor = (0.1 * limitPerSecond) / n;
  const asked = (node: NodeDemand) => Math.max(Number.isFinite(node.demand) ? node.demand : 0, floor);
  const sorted = [...nodes].sort((a, b) => asked(a) - asked(b));
  let left = limitPerSecond;
  const given = new Map<string, number>();
  sorted.forEach((node, i) => {
    const fair = left / (n - i);
    const take = Math.min(asked(node), fair);
    given.set(node.id, take);
    left -= take;
  });
  const spare = left / n;
  for (const node of nodes) shares.set(node.id, ((given.get(node.id) as number) + spare) / limitPerSecond);
  return shares;
}

/**
 * This node's fraction of the limit from its fleet's summary (see membership.lua), the same division as
 * divideShares without the membership: `'equal'`, 1 / nodes; `'demand'`, what it asks (its demand, at least a
 * tenth of an equal split) up to the fleet's water level, plus its part of what nobody asked for.
 * @example
 * shareFromSummary('demand', { nodes: 2, level: 550, spare: 0 }, 900, 1000) // 0.55
 */
export function shareFromSummary(
  mode: ShareMode,
  summary: FleetSummary,
  demand: number,
  limitPerSecond: number,
): number {
  const nodes = Math.max(1, summary.nodes);
  if (mode === 'equal') return 1 / nodes;
  const asked = Math.max(Number.isFinite(demand) ? demand : 0, (0.1 * limitPerSecond) / nodes);
  const fraction = (Math.min(asked, summary.level) + summary.spare) / limitPerSecond;
  return Math.min(1, Math.max(fraction, Number.MIN_VALUE));
}
