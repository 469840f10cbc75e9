import calculateSlot from 'cluster-key-slot';
import type { RedisConnection } from './connection/connection.js';

/**
 * `items` grouped by the Cluster slot of `keyOf(item)`, in their order: one script call per group (one group on
 * a standalone server), for a heartbeat that covers many limiters at once.
 * @example
 * for (const group of bySlot(connection, prefixes, fleetKey)) await call(group)
 */
export function bySlot<T>(connection: RedisConnection, items: Iterable<T>, keyOf: (item: T) => string): T[][] {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const slot = connection.isCluster ? calculateSlot(keyOf(item)) : 0;
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [item]);
    else group.push(item);
  }
  return [...groups.values()];
}
