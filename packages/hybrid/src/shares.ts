import { SluiceRangeError, SluiceTypeError } from '@sluice/core';
import { describeValue, positiveFinite } from '@sluice/core/internal';

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
 * This node's allocated fraction of the limit from its heartbeat's answer: the smaller of its allocations (each a
 * fraction of the limit: membership.lua keeps them so, whatever limit each division was made under) in the
 * fleet's last two divisions (membership.lua), so a node's share grows only once the others have had an
 * interval to shrink theirs. A node allocated in one division only (it just joined a fleet) holds none while a
 * reserve serves it (`overlap: false`); without a reserve (`overlap: true`) it holds that allocation at once,
 * and the fleet may admit up to that much over the limit until every node has seen the division. Undefined
 * when the node has no allocation yet (it keeps what it holds).
 * @example
 * allocatedFraction({ current: 0.55, previous: 0.5 }, false) // 0.5
 */
export function allocatedFraction(
  summary: { readonly current: number | undefined; readonly previous: number | undefined },
  overlap: boolean,
): number | undefined {
  const { current, previous } = summary;
  if (current === undefined) return undefined;
  const allocation = previous !== undefined ? Math.min(current, previous) : overlap ? current : 0;
  return Math.min(1, allocation);
}

/**
 * The fewest whole permits of a rule's burst a node holds locally: a share smaller than this strands more
 * than it saves (a bucket of 1 or 2 tokens is full, its refill wasted, whenever the node's few requests pause:
 * 1,000 nodes at 2.5 requests per second each used 83% of the limit holding theirs, 97-99% drawing on the
 * reserve instead), so the reserve serves such a node.
 */
export const LEAST_HELD = 4;

/**
 * The fraction of a divided limit a node holds locally: `divided` (1 - the reserve) of its allocated fraction,
 * when that is at least LEAST_HELD whole permits of the rule's burst; else none (0), and the reserve serves the
 * node (membership.lua counts what nodes hold with the same steps, so its reserve takes exactly what they do
 * not).
 * @example
 * localFraction(0.001, 100, 0.7) // 0: 0.07 of a permit, the reserve serves it
 */
export function localFraction(allocated: number, burst: number, divided: number): number {
  const fraction = divided * allocated;
  return Math.floor(burst * fraction + 1e-9) >= LEAST_HELD ? fraction : 0;
}

/**
 * The fraction of a divided limit a node holds in place of its part of the reserve while Redis is unreachable
 * (its heartbeats or draws fail, so no node can draw on the reserve): what its allocation holds beyond its
 * share (`held`: the divided part, or none when that is under LEAST_HELD), when that is at least one whole
 * permit of the burst; else none. The fleet's allocations sum to at most the limit, so through an outage of
 * the whole fleet this adds nothing past it; a node cut off alone while the others still draw on the reserve
 * admits up to this much more until Redis answers again, and is then charged for it (the reserve pays back).
 * @example
 * awayFraction(0.001, 0, 4_000) // 0.001: a node holding none of its 4 permits a second holds them all while away
 */
export function awayFraction(allocated: number, held: number, burst: number): number {
  const away = allocated - held;
  return Math.floor(burst * away + 1e-9) >= 1 ? away : 0;
}
