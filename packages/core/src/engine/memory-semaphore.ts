import type { SemaphoreBinding, SemaphoreSpec, SlotAttempt } from './semaphore-store.js';

/** One key's slots: who holds one, and who waits for one, in order. */
interface SlotsOfKey {
  readonly holders: Set<string>;
  /** Higher priorities first, then first come. */
  readonly queue: Array<{ readonly ticket: string; readonly priority: number }>;
}

/**
 * The slots of one process's concurrency limiters, by prefix and key: the same queue rules as Redis
 * (first come, first served; a try never passes a queued ticket), with nothing to expire, since a holder
 * here cannot die apart from the store. A key with no holder and no waiter holds no memory, so memory is
 * bounded by what is in flight.
 */
export class MemorySemaphores {
  readonly #keys = new Map<string, SlotsOfKey>();
  readonly #listeners = new Map<string, Set<(key: string) => void>>();

  /** Keys with a slot held or a caller waiting, over every prefix. */
  get size(): number {
    return this.#keys.size;
  }

  bind(spec: SemaphoreSpec): SemaphoreBinding {
    // `max` is read at every attempt: a fail mode's share of a fleet's slots follows the fleet (see FleetShare).
    const { prefix } = spec;
    const keys = this.#keys;
    const id = (key: string): string => `${prefix}\u0001${key}`;
    let listeners = this.#listeners.get(prefix);
    if (listeners === undefined) this.#listeners.set(prefix, (listeners = new Set()));
    const subscribers = listeners;
    // Told on a later turn: a release inside a listener's own bookkeeping must not re-enter it.
    const freed = (key: string): void => {
      if (subscribers.size > 0) {
        queueMicrotask(() => {
          for (const listener of subscribers) listener(key);
        });
      }
    };
    const drop = (key: string, slots: SlotsOfKey): void => {
      if (slots.holders.size === 0 && slots.queue.length === 0) keys.delete(id(key));
    };

    return {
      attempt(key, ticket, queue, priority = 0): SlotAttempt {
        let slots = keys.get(id(key));
        if (slots === undefined) keys.set(id(key), (slots = { holders: new Set(), queue: [] }));
        const place = slots.queue.findIndex((w) => w.ticket === ticket);
        // A newcomer goes behind every waiter of its priority or higher.
        const behind = slots.queue.findIndex((w) => w.priority < priority);
        const ahead = place !== -1 ? place : behind === -1 ? slots.queue.length : behind;
        if (ahead < spec.max - slots.holders.size) {
          if (place !== -1) slots.queue.splice(place, 1);
          slots.holders.add(ticket);
          return { granted: true, source: 'store' };
        }
        if (queue && place === -1) slots.queue.splice(ahead, 0, { ticket, priority });
        drop(key, slots);
        return { granted: false, retryInMs: undefined };
      },
      release(key, ticket) {
        const slots = keys.get(id(key));
        const held = slots?.holders.delete(ticket) ?? false;
        if (slots !== undefined) drop(key, slots);
        if (held) freed(key);
        return held;
      },
      leave(key, ticket) {
        const slots = keys.get(id(key));
        if (slots === undefined) return;
        const place = slots.queue.findIndex((w) => w.ticket === ticket);
        if (place === -1) return;
        slots.queue.splice(place, 1);
        drop(key, slots);
        // The tickets behind it moved up: one of them may now fit.
        freed(key);
      },
      renew: () => [],
      onFreed(listener) {
        subscribers.add(listener);
        return () => subscribers.delete(listener);
      },
      unbind() {},
    };
  }
}
