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
import {
  adjustmentValue,
  configRecordValue,
  engineAsks,
  engineRules,
  engineTime,
  heartbeatValue,
  leaseAskValue,
  listenerValue,
  stringValue,
  versionValue,
} from './engine-input.js';
import { engineCall } from './checked-engine.js';
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
    return engineTime(at) ?? this.#clock.now();
  }

  decide(rules: EngineRules, asks: readonly EngineAsk[]): Promise<readonly DecideAnswer[]> {
    return engineCall('decide', () => {
      const r = engineRules(rules);
      const checked = engineAsks(asks, r.rules);
      // Nothing asked, nothing changed: not even the version (redisEngine sends nothing for it).
      if (checked.length === 0) return [];
      const stale = this.#data.stale(r.prefix, r.version);
      if (stale !== undefined) return checked.map(() => ({ stale }));
      return checked.map((ask) => decideAsk(this.#data, r, ask, this.#now(ask.at)));
    });
  }

  adjust(rules: EngineRules, key: string, adjustment: Adjustment, at: EngineTime): Promise<AdjustAnswer> {
    return engineCall('adjust', () => {
      const r = engineRules(rules);
      const k = stringValue('key', key, true);
      const a = adjustmentValue(adjustment, r.rules);
      const now = this.#now(at);
      const stale = this.#data.stale(r.prefix, r.version);
      if (stale !== undefined) return { stale };
      return { freed: adjustKey(this.#data, r, k, a, now) };
    });
  }

  lease(rules: EngineRules, ask: LeaseAsk, at: EngineTime): Promise<LeaseAnswer> {
    return engineCall('lease', () => {
      const r = engineRules(rules);
      const a = leaseAskValue(ask, r.rules);
      const now = this.#now(at);
      const stale = this.#data.stale(r.prefix, r.version);
      if (stale !== undefined) return { stale };
      return leaseOf(this.#data, r, a, now);
    });
  }

  heartbeat(beat: Heartbeat, at: EngineTime): Promise<HeartbeatAnswer> {
    return engineCall('heartbeat', () => {
      const b = heartbeatValue(beat);
      return heartbeatOf(this.#data, b, this.#now(at));
    });
  }

  readConfig(prefix: string): Promise<ConfigRead> {
    return engineCall('readConfig', () => {
      const p = stringValue('prefix', prefix);
      return { record: this.#data.configs.get(p), engineNowMs: Math.floor(this.#clock.now()) };
    });
  }

  writeConfig(prefix: string, expected: number, record: ConfigRecord, key?: string): Promise<ConfigWrite> {
    return engineCall('writeConfig', (): ConfigWrite => {
      const p = stringValue('prefix', prefix);
      const e = versionValue('expected', expected);
      const r = configRecordValue(record);
      // One version per prefix here: a key's change raises it everywhere, as any other.
      if (key !== undefined) stringValue('key', key, true);
      const stored = this.#data.configs.get(p)?.version ?? 1;
      if (stored !== e) return { written: false, conflict: stored };
      this.#data.configs.set(p, { version: r.version, text: r.text });
      // The record's version is the prefix's from now on: a call under an older one is stale.
      this.#data.stale(p, r.version);
      return { written: true };
    });
  }

  publish(channel: string, message: string): Promise<void> {
    return engineCall('publish', () => {
      const c = stringValue('channel', channel);
      const m = stringValue('message', message, true);
      // Each listener subscribed now hears it, after this call returns; microtasks keep publishing order.
      for (const listener of this.#channels.get(c) ?? []) queueMicrotask(() => listener(m));
    });
  }

  subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    return engineCall('subscribe', () => {
      const c = stringValue('channel', channel);
      const heard = listenerValue(listener);
      let listening = true;
      // A listener's own failure is its own: it never stops delivery to the others.
      const deliver = (message: string): void => {
        if (!listening) return;
        try {
          heard(message);
        } catch {
          // ignored, as a backend's subscriber connection would
        }
      };
      const set = this.#channels.get(c) ?? new Set();
      set.add(deliver);
      this.#channels.set(c, set);
      return async (): Promise<void> => {
        listening = false;
        set.delete(deliver);
        if (set.size === 0 && this.#channels.get(c) === set) this.#channels.delete(c);
      };
    });
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
    return new MemoryEngine(o.clock ?? systemClock);
  });
}
