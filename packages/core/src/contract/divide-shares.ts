/**
 * The division of a fleet's limit among its nodes by demand (water-filling): membership.lua's water_level and
 * allocate in @sluice/redis, step for step (the one TypeScript twin: @sluice/hybrid reads it too), so that the memory engine and a backend's script divide alike.
 * Pure: no engine, no clock.
 */
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { describe, positiveFinite } from '../foundation/validate.js';

/** How a divided limit is split among live nodes. */
export type ShareMode = 'equal' | 'demand';

/** One live node of a divided limiter, as its heartbeat reported it. */
export interface NodeDemand {
  readonly id: string;
  /** Recent demand, in permits per second (what it asked for, granted or not). */
  readonly demand: number;
}

/** The water level and what is left per node (membership.lua's water_level). */
export interface WaterLevel {
  /** The most one node is given of what it asks (Infinity: every node gets what it asks). */
  readonly level: number;
  /** What nobody asked for, per node. */
  readonly spare: number;
}

/**
 * Water-fills `limit` over `demands` (ascending) for `n` nodes, each asking at least a tenth of an equal split.
 * More demands than nodes: an equal split (a backend that lost one set and not the other).
 */
export function waterLevel(demands: readonly number[], n: number, limit: number): WaterLevel {
  const floor = (0.1 * limit) / n;
  let left = limit;
  let k = 0;
  for (const demand of demands) {
    if (k >= n) return { level: limit / n, spare: 0 };
    const asked = Math.max(demand, floor);
    const fair = left / (n - k);
    if (asked >= fair) return { level: fair, spare: 0 };
    left -= asked;
    k++;
  }
  return { level: Number.POSITIVE_INFINITY, spare: left / n };
}

/** Orders demands as a backend's sorted set does: by demand, then by node id. */
export function byDemand(a: NodeDemand, b: NodeDemand): number {
  if (a.demand !== b.demand) return a.demand - b.demand;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Each node's fraction of the limit (they sum to 1). `'equal'`: 1/N each. `'demand'`: max-min fair shares
 * of the reported demand (water-filling): a node asking less than an equal split gets what it asks, the rest
 * is split among the busier ones; capacity nobody asked for is split equally. Every node counts as asking at
 * least a tenth of an equal split, so an idle node is never held at zero until its next heartbeat.
 * @example
 * divideShares('demand', [{ id: 'a', demand: 900 }, { id: 'b', demand: 100 }], 1000) // Map { a => 0.9, b => 0.1 }
 */
export function divideShares(
  mode: ShareMode,
  nodes: readonly NodeDemand[],
  limitPerSecond: number,
): Map<string, number> {
  if (mode !== 'equal' && mode !== 'demand')
    throw new SluiceRangeError('mode', mode, `mode must be 'equal' or 'demand', got ${describe(mode)}`);
  if (!Array.isArray(nodes))
    throw new SluiceTypeError('nodes', nodes, `nodes must be an array of { id, demand }, got ${describe(nodes)}`);
  positiveFinite('limitPerSecond', limitPerSecond);
  const shares = new Map<string, number>();
  const n = nodes.length;
  if (n === 0) return shares;
  if (mode === 'equal') {
    for (const node of nodes) shares.set(node.id, 1 / n);
    return shares;
  }
  const sorted = nodes
    .map((node) => ({ id: node.id, demand: Number.isFinite(node.demand) ? node.demand : 0 }))
    .sort(byDemand);
  const { level, spare } = waterLevel(
    sorted.map((node) => node.demand),
    n,
    limitPerSecond,
  );
  const floor = (0.1 * limitPerSecond) / n;
  // In the nodes' own order: a caller reads the shares as it listed the nodes.
  for (const node of nodes) {
    const demand = Number.isFinite(node.demand) ? node.demand : 0;
    shares.set(node.id, (Math.min(Math.max(demand, floor), level) + spare) / limitPerSecond);
  }
  return shares;
}
