import type { Clock } from '../foundation/clock.js';
import { SluiceRangeError } from '../foundation/errors.js';
import {
  type AccessEntry,
  type AccessListBinding,
  MAX_ACCESS_ENTRIES,
  type NewAccessEntry,
  type StoredAccessList,
} from './access-list-store.js';

/** One prefix's list: its entries by text, its version (the lists live as long as the process), and the bindings to tell of a change. */
interface PrefixList {
  version: number;
  readonly entries: Map<string, AccessEntry>;
  readonly listeners: Set<() => void>;
}

/**
 * Access lists kept in this process (the memory store's): the limiters of one prefix share one, and a
 * change through one binding is told to the others, as Redis tells other nodes. Entries expire on `clock`.
 * @example
 * const list = new MemoryAccessLists().bind('api')
 * await list.put([{ entry: '10.0.0.0/8', list: 'deny', reason: 'scraper' }])
 */
export class MemoryAccessLists {
  readonly #lists = new Map<string, PrefixList>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  bind(prefix: string): AccessListBinding {
    const list = (): PrefixList => {
      let found = this.#lists.get(prefix);
      if (found === undefined)
        this.#lists.set(prefix, (found = { version: 0, entries: new Map(), listeners: new Set() }));
      return found;
    };
    const own = new Set<() => void>();
    const changed = (at: PrefixList): void => {
      at.version++;
      for (const listener of at.listeners) if (!own.has(listener)) listener();
    };
    return {
      remote: false,
      read: async (knownVersion?: string): Promise<StoredAccessList> => {
        const at = list();
        const version = String(at.version);
        const now = this.#clock.now();
        if (knownVersion === version) return { version, now };
        return { version, now, entries: [...at.entries.values()] };
      },
      put: async (entries: readonly NewAccessEntry[]) => {
        const at = list();
        const added = entries.filter((e) => !at.entries.has(e.entry)).length;
        if (at.entries.size + added > MAX_ACCESS_ENTRIES) {
          // Expired entries hold nothing: they make room before a list counts as full.
          const now = this.#clock.now();
          for (const [text, e] of at.entries)
            if (e.expiresAt !== undefined && e.expiresAt <= now) at.entries.delete(text);
        }
        if (at.entries.size + added > MAX_ACCESS_ENTRIES)
          throw new SluiceRangeError(
            'entries',
            entries.length,
            `the access list holds ${at.entries.size} entries: ${added} more would pass its ${MAX_ACCESS_ENTRIES}`,
          );
        const now = this.#clock.now();
        for (const { ttlMs, ...entry } of entries)
          at.entries.set(entry.entry, ttlMs === undefined ? entry : { ...entry, expiresAt: now + ttlMs });
        changed(at);
      },
      remove: async (texts) => {
        const at = list();
        let removed = 0;
        for (const text of texts) if (at.entries.delete(text)) removed++;
        if (removed > 0) changed(at);
        return removed;
      },
      onChange: (listener) => {
        const at = list();
        at.listeners.add(listener);
        own.add(listener);
        return () => {
          at.listeners.delete(listener);
          own.delete(listener);
        };
      },
      unbind: () => {
        const at = this.#lists.get(prefix);
        for (const listener of own) at?.listeners.delete(listener);
        own.clear();
      },
    };
  }
}
