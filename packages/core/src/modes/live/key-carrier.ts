import { type Engine, type EngineRules, isStale } from '../../contract/engine.js';
import { keyCache } from '../../engine/key-cache.js';
import type { Clock } from '../../foundation/clock.js';
import { withDeadline } from '../deadline.js';
import { type LiveConfig, rulesOf } from './config-record.js';

/** What a KeyCarrier needs: where the states live, and what a stale answer does. */
export interface KeyCarrierParts {
  /** The engine the carries are made through (its deadline this carrier's). */
  readonly engine: Engine;
  readonly prefix: string;
  readonly timeoutMs: number;
  /** The most keys whose carry this node remembers having made. */
  readonly maxKeys: number;
  /** The decision clock (undefined: the engine's) and this process's clock (carry windows). */
  readonly decisionClock: Clock | undefined;
  readonly localClock: Clock;
  /** The name of the states a rule's state name stands for in this mode (undefined: the state name itself). */
  readonly centralName?: ((state: string) => string) | undefined;
  /**
   * A carry found its slot at a newer version: resolves once the configuration read from Redis is adopted
   * (true) or could not be read (false).
   */
  readonly onStale: (version: number) => Promise<boolean>;
}

/**
 * While a change's carry window is open, the first touch of a key on this node carries its states from the
 * earlier generations to the rules in force (carry_key.lua, atomic per key; the first node to touch it does
 * the work, the others find its states carried), through the engine's `adjust` carry. Remembers the keys it
 * carried under the current version.
 * @example
 * const carrier = new KeyCarrier(parts)
 * carrier.adopt(config)                 // a new configuration: its carry window opens
 * await carrier.carryFirst('user:1')    // before the key's first decision under it
 */
export class KeyCarrier {
  readonly #parts: KeyCarrierParts;
  #config: LiveConfig | undefined;
  /** Carries under way, by key (the keys this node carried under the current version: #remembered). */
  #carrying = new Map<string, Promise<void>>();
  /** Until when a link of the current version carries (0: none does). */
  #carryUntil = 0;
  readonly #remembered: ReturnType<typeof keyCache<string, true>>;

  constructor(parts: KeyCarrierParts) {
    this.#parts = parts;
    this.#remembered = keyCache<string, true>(parts.maxKeys);
  }

  /** Carries to `config`'s rules from now on: its carry window opens (the keys carried before are forgotten). */
  adopt(config: LiveConfig): void {
    this.#config = config;
    this.#remembered.clear();
    this.#carrying = new Map();
    const links = [...config.rules, ...[...config.overrides.values()].flat()].flatMap((entry) =>
      entry.from.map((link) => link.until),
    );
    for (const byName of config.returning.values())
      for (const list of Object.values(byName)) for (const link of list) links.push(link.until);
    this.#carryUntil = links.length === 0 ? 0 : Math.max(...links);
  }

  /**
   * While the carry window is open: the carry of `key`'s states to the rules it is decided by, when this
   * node has not made it yet (undefined: nothing to wait for).
   */
  carryFirst(key: string): Promise<void> | undefined {
    if (this.#carryUntil === 0) return undefined;
    const now = this.#parts.localClock.now();
    if (now > this.#carryUntil) {
      this.#carryUntil = 0;
      return undefined;
    }
    if (this.#remembered.has(key)) return undefined;
    const under = this.#carrying.get(key);
    if (under !== undefined) return under;
    const carry = this.#carry(key, now).finally(() => this.#carrying.delete(key));
    this.#carrying.set(key, carry);
    return carry;
  }

  /** Carries `key`'s states through the engine (Adjustment 'carry'): a failure is left to the decision that follows (its fail mode). */
  async #carry(key: string, nowMs: number): Promise<void> {
    const config = this.#config;
    if (config === undefined) return;
    const carried = rulesOf(config, key)
      .map((entry) => ({ ...entry, from: entry.from.filter((link) => link.until >= nowMs) }))
      .filter((entry) => entry.from.length > 0);
    if (carried.length === 0) {
      this.#remembered.set(key, true);
      return;
    }
    const { prefix, timeoutMs, decisionClock } = this.#parts;
    const central = this.#parts.centralName ?? ((state: string) => state);
    const rules: EngineRules = {
      prefix,
      rules: carried.map((entry) => entry.rule),
      states: carried.map((entry) => central(entry.state)),
      version: config.version,
    };
    const links = carried.map((entry, rule) => ({
      rule,
      from: entry.from.map((link) => ({ rule: link.rule, state: central(link.state), mode: link.mode })),
    }));
    try {
      const answer = await withDeadline(
        this.#parts.engine.adjust(rules, key, { op: 'carry', links }, decisionClock?.now()),
        timeoutMs,
        'a carry',
      );
      if (!isStale(answer)) {
        if (this.#config === config) this.#remembered.set(key, true);
        return;
      }
      if ((await this.#parts.onStale(answer.stale)) && this.#config !== config) {
        const again = this.carryFirst(key);
        if (again !== undefined) await again;
      }
    } catch {
      // The decision that follows meets the same failure and answers by the fail mode.
    }
  }
}
