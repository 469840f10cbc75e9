/** How a divided limit is split among live nodes (core's one TypeScript twin of membership.lua's division). */
export { divideShares } from '@sluice/core/internal';
export type { NodeDemand, ShareMode } from '@sluice/core/internal';

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
