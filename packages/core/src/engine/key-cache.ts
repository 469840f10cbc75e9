import { LRUCache } from 'lru-cache';

const one = (): number => 1;

/**
 * An LRU cache of at most `maxKeys` entries whose memory grows with use. With lru-cache's `max`, every slot
 * is allocated up front (100,000 slots cost about 2.7 MB before the first key); bounding by `maxSize` with a
 * size of 1 per entry gives the same bound and eviction order on arrays that grow as keys arrive.
 * @example
 * const leases = keyCache<string, Lease>(10_000) // LRU of at most 10,000 keys
 */
export function keyCache<K extends {}, V extends {}>(
  maxKeys: number,
  dispose?: LRUCache.Disposer<K, V>,
): LRUCache<K, V> {
  return new LRUCache<K, V>(
    dispose === undefined
      ? { maxSize: maxKeys, sizeCalculation: one }
      : { maxSize: maxKeys, sizeCalculation: one, dispose },
  );
}
