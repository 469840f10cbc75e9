import type { Clock } from '../foundation/clock.js';
import type { PauseBinding } from './pause-store.js';

/** Past this many keys' pauses, the ended ones are dropped as another is set. */
const SWEEP_AT = 256;

/** Until when one throttle's calls are paused: all of them, and per key. */
interface PausesOfPrefix {
  all: number;
  readonly keys: Map<string, number>;
  /** Each binding's listener, told of the pauses set through the other bindings of the prefix. */
  readonly listeners: Map<object, Set<(key: string | undefined, ms: number) => void>>;
}

/**
 * The pauses of one process's throttles, by prefix and key, on the store's clock. A pause that ended is
 * dropped when its key is next read, so memory is bounded by the pauses in force.
 * @example
 * const pauses = new MemoryPauses(clock).bind('llm')
 * pauses.pause(undefined, 2_000) // nobody calls for 2 s
 */
export class MemoryPauses {
  readonly #prefixes = new Map<string, PausesOfPrefix>();

  constructor(private readonly clock: Clock) {}

  bind(prefix: string): PauseBinding {
    let pauses = this.#prefixes.get(prefix);
    if (pauses === undefined) {
      pauses = { all: 0, keys: new Map(), listeners: new Map() };
      this.#prefixes.set(prefix, pauses);
    }
    const of = pauses;
    const clock = this.clock;
    const self = {};
    const own = new Set<(key: string | undefined, ms: number) => void>();
    of.listeners.set(self, own);
    return {
      pause(key, ms) {
        const now = clock.now();
        const until = now + ms;
        if (key === undefined) of.all = Math.max(of.all, until);
        else of.keys.set(key, Math.max(of.keys.get(key) ?? 0, until));
        // Pauses of many keys never read again: the ended ones go, so memory follows the pauses in force.
        if (of.keys.size > SWEEP_AT) for (const [k, end] of of.keys) if (end <= now) of.keys.delete(k);
        // Told on a later turn: a listener may pause again.
        queueMicrotask(() => {
          for (const [binding, listeners] of of.listeners) {
            if (binding !== self) for (const listener of listeners) listener(key, ms);
          }
        });
      },
      pausedFor(key) {
        const now = clock.now();
        const own = of.keys.get(key);
        if (own !== undefined && own <= now) of.keys.delete(key);
        return Math.max(0, of.all - now, (own ?? 0) - now);
      },
      onPaused(listener) {
        own.add(listener);
        return () => own.delete(listener);
      },
      unbind() {
        of.listeners.delete(self);
      },
    };
  }
}
