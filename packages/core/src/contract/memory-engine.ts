/**
 * The in-process engine: every method of the engine contract over this process's memory, deciding as core's
 * memory store does. What a backend's engine is checked against (checkEngine's reference), and the engine of
 * tests and of a single process.
 */
import { type Clock, clockValue, systemClock } from '../foundation/clock.js';
import { inCall } from '../foundation/errors.js';
import { type SchemaOf, optional, parseOptions } from '../foundation/options.js';
import type {
  AdjustAnswer,
  Adjustment,
  ConfigRead,
  ConfigRecord,
  ConfigWrite,
  DecideAnswer,
  Engine,
  EngineAsk,
  EngineRules,
  EngineTime,
  Heartbeat,
  HeartbeatAnswer,
  LeaseAnswer,
  LeaseAsk,
} from './engine.js';
import { checkedEngine } from './checked-engine.js';
import { adjustKey, decideAsk } from './memory-decide.js';
import { EngineState } from './memory-engine-state.js';
import { heartbeatOf } from './memory-fleet.js';
import { leaseOf } from './memory-lease.js';

/** Options of `memoryEngine`. */
export interface MemoryEngineOptions {
  /**
   * The engine's own clock: the time of a call made with `at` undefined, and the clock states expire on.
   * @default systemClock
   */
  clock?: Clock;
}

/** memoryEngine's options, checked (see parseOptions); documented on MemoryEngineOptions. */
export const MEMORY_ENGINE_OPTIONS = {
  clock: optional(clockValue),
} as const satisfies SchemaOf<MemoryEngineOptions>;

/**
 * The memory engine's calls on inputs checkedEngine has checked (memoryEngine wraps it): the contract's one
 * set of checks runs once, in front of every engine alike.
 */
class MemoryEngine implements Engine {
  readonly name = 'memory';
  readonly #data: EngineState;
  readonly #clock: Clock;
  readonly #channels = new Map<string, Set<(message: string) => void>>();

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#data = new EngineState(clock);
  }

  #now(at: EngineTime): number {
    return at ?? this.#clock.now();
  }

  async decide(rules: EngineRules, asks: readonly EngineAsk[]): Promise<readonly DecideAnswer[]> {
    // Nothing asked, nothing changed: not even the version (redisEngine sends nothing for it).
    if (asks.length === 0) return [];
    const stale = this.#data.stale(rules.prefix, rules.version);
    if (stale !== undefined) return asks.map(() => ({ stale }));
    return asks.map((ask) => decideAsk(this.#data, rules, ask, this.#now(ask.at)));
  }

  async adjust(rules: EngineRules, key: string, adjustment: Adjustment, at: EngineTime): Promise<AdjustAnswer> {
    const now = this.#now(at);
    const stale = this.#data.stale(rules.prefix, rules.version);
    if (stale !== undefined) return { stale };
    return { freed: adjustKey(this.#data, rules, key, adjustment, now) };
  }

  async lease(rules: EngineRules, ask: LeaseAsk, at: EngineTime): Promise<LeaseAnswer> {
    const now = this.#now(at);
    const stale = this.#data.stale(rules.prefix, rules.version);
    if (stale !== undefined) return { stale };
    return leaseOf(this.#data, rules, ask, now);
  }

  async heartbeat(beat: Heartbeat, at: EngineTime): Promise<HeartbeatAnswer> {
    return heartbeatOf(this.#data, beat, this.#now(at));
  }

  async readConfig(prefix: string): Promise<ConfigRead> {
    return { record: this.#data.configs.get(prefix), engineNowMs: Math.floor(this.#clock.now()) };
  }

  /** One version per prefix here: a key's change (`key`) raises it everywhere, as any other. */
  async writeConfig(prefix: string, expected: number, record: ConfigRecord): Promise<ConfigWrite> {
    const stored = this.#data.configs.get(prefix)?.version ?? 1;
    if (stored !== expected) return { written: false, conflict: stored };
    this.#data.configs.set(prefix, { version: record.version, text: record.text });
    // The record's version is the prefix's from now on: a call under an older one is stale.
    this.#data.stale(prefix, record.version);
    return { written: true };
  }

  async publish(channel: string, message: string): Promise<void> {
    // Each listener subscribed now hears it, after this call returns; microtasks keep publishing order.
    for (const listener of this.#channels.get(channel) ?? []) queueMicrotask(() => listener(message));
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    let listening = true;
    // A listener's own failure is its own: it never stops delivery to the others.
    const deliver = (message: string): void => {
      if (!listening) return;
      try {
        listener(message);
      } catch {
        // ignored, as a backend's subscriber connection would
      }
    };
    const set = this.#channels.get(channel) ?? new Set();
    set.add(deliver);
    this.#channels.set(channel, set);
    return async (): Promise<void> => {
      listening = false;
      set.delete(deliver);
      if (set.size === 0 && this.#channels.get(channel) === set) this.#channels.delete(channel);
    };
  }
}

/**
 * Creates the in-process engine: states, bans, lessees, fleets and configuration records in this process's
 * memory, decided as core's memory store decides; `at` undefined is `clock`'s time.
 * @example
 * const engine = memoryEngine({ clock: new ManualClock(0) })
 * await checkEngine(engine) // the conformance suite passes on it
 */
export function memoryEngine(options?: MemoryEngineOptions): Engine {
  return inCall('memoryEngine', () => {
    const o = parseOptions('memoryEngine options', MEMORY_ENGINE_OPTIONS, options, false);
    return checkedEngine(new MemoryEngine(o.clock ?? systemClock));
  });
}
