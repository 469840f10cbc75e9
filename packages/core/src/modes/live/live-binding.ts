import type { Algorithm } from '../../algorithms/algorithm.js';
import type { CarryMode } from '../../algorithms/carry.js';
import { ruleSpec } from '../../algorithms/rule-spec.js';
import type { Engine } from '../../contract/engine.js';
import type { BoundStore, GrantSource, LimiterConfiguration, Permits, SharedRules } from '../../engine/store.js';
import type { DecisionNote, DecisionSource } from '../../engine/observe.js';
import type { Clock } from '../../foundation/clock.js';
import type { Decision } from '../../foundation/decision.js';
import { staleVersionOf } from '../stale.js';
import {
  type LiveConfig,
  type LiveRule,
  firstConfig,
  overridden,
  reconfigured,
  withoutOverride,
} from './config-record.js';
import { KeyCarrier } from './key-carrier.js';
import { StoredConfiguration } from './stored-config.js';

/** What an exact binding of one set of rules can do, as LiveBinding uses it. */
export interface VersionBinding extends BoundStore {
  /** Drops the key from the binding's deny cache. */
  forget(key: string): void;
  /** Drops every denial the binding cached. */
  forgetAll(): void;
  /** Charges the engine, answering again, with what the fail mode granted meanwhile. */
  settleFallback(): Promise<{ keys: number; permits: number; kept: number }>;
  unbind(): void;
}

/** What a binding of one set of rules decides under: the rules and their state names, a key's own or not. */
export interface VersionRules {
  readonly rules: readonly LiveRule[];
  /** The binding of one key's override (its decisions say so). */
  readonly override: boolean;
  /** The configuration version it sends with each call (read per call: it moves on while its rules stay). */
  readonly version: () => number;
  /** Keeps its fail mode's states apart from other bindings' (undefined: the limiter's first rules). */
  readonly apart: string | undefined;
}

/** What a LiveBinding is made of: where the configuration lives, and how a binding of one set of rules is made. */
export interface LiveParts {
  /** The engine the configuration is kept on (its deadlines this binding's). */
  readonly engine: Engine;
  readonly prefix: string;
  /** The rules the limiter was created with (version 1). */
  readonly rules: readonly Algorithm[];
  readonly timeoutMs: number;
  /** The most keys whose carry this node remembers having made (the store's maxKeys). */
  readonly maxKeys: number;
  /** The decision clock (undefined: the engine's) and this process's clock (carry windows). */
  readonly decisionClock: Clock | undefined;
  readonly localClock: Clock;
  /** Makes the exact binding that decides under `rules`, whose stale answers go to `onStale`. */
  readonly bindVersion: (
    rules: VersionRules,
    onStale: (version: number) => Promise<BoundStore | undefined>,
  ) => VersionBinding;
  /** A configuration that could not be read or used: the store's 'store-error'. */
  readonly report: (error: Error) => void;
  /** A configuration is in force from now on (the store's 'reconfigured'). */
  readonly adopted: (configuration: LimiterConfiguration) => void;
  /** Releases what the store holds for the limiter. */
  readonly unbind: () => void;
  /**
   * The name of the states a rule's state name stands for in this mode (leased mode's central state is
   * `lease~${state}`); undefined: the state name itself.
   */
  readonly centralName?: ((state: string) => string) | undefined;
  /** Throws for rules this mode cannot decide (leased mode's kinds; a Cluster's scoped rules), before anything is stored (`key`: an override's). */
  readonly checkRules?: ((rules: readonly Algorithm[], key: string | undefined) => void) | undefined;
}

/** A binding of one set of rules, the text that says which (state names and rules), and its version. */
interface Held {
  readonly binding: VersionBinding;
  readonly signature: string;
  readonly holder: { version: number };
}

/** Ids of rules no spec can say (a scope function's): such a rule is only ever the same as itself. */
const unspecified = new WeakMap<Algorithm, number>();
let lastUnspecified = 0;

/** Every parameter of `rule` (its spec), or its own id when a scope function keeps it from having one. */
function parametersOf(rule: Algorithm): unknown {
  if (typeof rule.scope !== 'function') return ruleSpec(rule);
  let id = unspecified.get(rule);
  if (id === undefined) unspecified.set(rule, (id = ++lastUnspecified));
  return { unspecified: id };
}

/** What identifies a set of rules' decisions: each rule's state name and every parameter. */
const signatureOf = (rules: readonly LiveRule[]): string =>
  JSON.stringify(rules.map((e) => [e.state, parametersOf(e.rule)]));

/**
 * A mode with live limits (exact and leased mode): the limiter's configuration (its rules and its keys'
 * overrides) kept by the engine for every node of its prefix (SharedRules, StoredConfiguration). Decisions go
 * to the mode's binding of the rules this node knows for the key, which sends the configuration version with
 * each call; an engine whose version is newer where the key's states live answers stale, and the decision is
 * asked again under the configuration read from the engine (a node that cannot read it decides by the fail
 * mode and says so through 'store-error'). A changed rule, and each override, keeps its states under a name
 * of its generation; while a change's carry window is open, a key's first touch on this node carries its
 * states from the earlier ones (the engine's `adjust` carry, atomic per key). A change of the limiter's rules
 * raises the version everywhere; an override's, where the key's states live (on a Redis Cluster, one slot).
 * @example
 * const binding = new LiveBinding(parts) // parts: see LiveParts; the store builds them
 * await binding.reconfigure([tokenBucket({ name: 'api', capacity: 50, refillPerSecond: 5 })], 'used')
 */
export class LiveBinding implements BoundStore, SharedRules {
  readonly #parts: LiveParts;
  #config: LiveConfig;
  #configuration: LimiterConfiguration;
  /** The binding of the limiter's rules, and those of overridden keys met so far. */
  #inner: Held;
  readonly #own = new Map<string, Held>();
  #ownBound = 0;
  /** The read of the stored configuration under way (concurrent stale answers share it). */
  #reading: Promise<BoundStore | undefined> | undefined;
  readonly #stored: StoredConfiguration;
  readonly #carrier: KeyCarrier;
  #bound = true;

  constructor(parts: LiveParts) {
    this.#parts = parts;
    this.#config = firstConfig(parts.rules);
    this.#configuration = { version: 1, rules: parts.rules };
    this.#stored = new StoredConfiguration({ engine: parts.engine, prefix: parts.prefix, timeoutMs: parts.timeoutMs });
    this.#carrier = new KeyCarrier({
      ...parts,
      onStale: async (version) => (await this.#onStale(version)) !== undefined,
    });
    this.#inner = this.#hold(this.#config.rules, false, undefined);
    const bans = typeof this.#inner.binding.block === 'function';
    this.block = bans ? (key, ms) => this.#for(key).block?.(key, ms) : undefined;
    this.unblock = bans ? (key) => this.#for(key).unblock?.(key) : undefined;
    this.explicitBan = bans ? (key) => this.#for(key).explicitBan?.(key) : undefined;
  }

  get configuration(): LimiterConfiguration {
    return this.#configuration;
  }

  /** The limiter's prefix (whose channel announces its changes). */
  get prefix(): string {
    return this.#parts.prefix;
  }

  /**
   * Reads the stored configuration now and decides under it (the store's ready(): `limiter.rules` then
   * says what is in force). Rejects when it cannot be read or is of a later format.
   */
  async refresh(): Promise<void> {
    const config = await this.#stored.inForce(this.#config, 1, this.#parts.report);
    if (config !== undefined) this.#adopt(config);
  }

  /**
   * Another node changed the configuration (its message on the limiter's reset channel): decide under the
   * stored one from now on (denials cached before it may not hold under it).
   */
  heard(): void {
    // Dropped now, not when the stored configuration has been read: a denial answered from the cache during
    // that read would be decided under rules another node has already replaced.
    this.forgetAll();
    this.refresh().catch((error: unknown) => this.#parts.report(asError(error)));
  }

  /** The binding `key` is decided by. */
  #for(key: string): VersionBinding {
    const own = this.#config.overrides.size === 0 ? undefined : this.#config.overrides.get(key);
    if (own === undefined) return this.#inner.binding;
    let held = this.#own.get(key);
    if (held === undefined) {
      held = this.#hold(own, true, `o${++this.#ownBound}`);
      this.#own.set(key, held);
    }
    return held.binding;
  }

  consume(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    const carry = this.#carryFirst(key);
    if (carry === undefined) return this.#for(key).consume(key, permits, maxWaitMs, note);
    return carry.then(() => this.#for(key).consume(key, permits, maxWaitMs, note));
  }

  peek(key: string): Decision | Promise<Decision> {
    const carry = this.#carryFirst(key);
    if (carry === undefined) return this.#for(key).peek(key);
    return carry.then(() => this.#for(key).peek(key));
  }

  async reset(key: string): Promise<void> {
    // Carried first: a reset must not leave an earlier generation's states to be carried back.
    await this.#controlled(key, (binding) => binding.reset(key));
  }

  async refund(key: string, permits: Permits, grantedMsAgo: number, grant?: GrantSource): Promise<void> {
    await this.#controlled(key, (binding) => binding.refund?.(key, permits, grantedMsAgo, grant));
  }

  async penalize(key: string, permits: Permits): Promise<void> {
    await this.#controlled(key, (binding) => binding.penalize?.(key, permits));
  }

  /**
   * A control of `key`'s states (reset, refund, penalize), after the key's states are carried to the rules it
   * is decided by. The engine checks the configuration version as for a decision: a newer one answers stale,
   * and the control is made again under the configuration read from the engine (it names states,
   * and a stale node would name the old generation's).
   */
  async #controlled(key: string, control: (binding: VersionBinding) => void | Promise<void>): Promise<void> {
    await this.#carryFirst(key);
    try {
      await control(this.#for(key));
    } catch (error) {
      const newer = staleVersionOf(error);
      if (newer === undefined || (await this.#onStale(newer)) === undefined) throw error;
      await this.#carryFirst(key);
      await control(this.#for(key));
    }
  }

  /** Bans, where this mode keeps them (undefined where it does not: the limiter then refuses, naming the store). */
  readonly block: ((key: string, ms: number) => void | Promise<void>) | undefined;
  readonly unblock: ((key: string) => void | Promise<void>) | undefined;
  readonly explicitBan: ((key: string) => Decision | undefined | Promise<Decision | undefined>) | undefined;

  /** Where this binding's decisions are made, as its bindings say (see BoundStore.source). */
  get source(): DecisionSource | undefined {
    return this.#inner.binding.source;
  }

  /** Drops every denial the limiter's bindings cached. */
  forgetAll(): void {
    for (const held of [this.#inner, ...this.#own.values()]) held.binding.forgetAll();
  }

  /** Drops `key` from the deny caches (a reset heard from another node). */
  forget(key: string): void {
    this.#inner.binding.forget(key);
    this.#own.get(key)?.binding.forget(key);
  }

  /** Charges the engine, answering again, with what the fail mode granted meanwhile (see ExactBinding.settleFallback). */
  async settleFallback(): Promise<{ keys: number; permits: number; kept: number }> {
    const settled = await Promise.all([this.#inner, ...this.#own.values()].map((h) => h.binding.settleFallback()));
    return settled.reduce((a, b) => ({ keys: a.keys + b.keys, permits: a.permits + b.permits, kept: a.kept + b.kept }));
  }

  unbind(): void {
    if (!this.#bound) return;
    this.#bound = false;
    for (const held of [this.#inner, ...this.#own.values()]) held.binding.unbind();
    this.#own.clear();
    this.#parts.unbind();
  }

  /** Stores `rules` as the limiter's next version for every node (see #change); every decision learns of it. */
  async reconfigure(rules: readonly Algorithm[], carry: CarryMode): Promise<LimiterConfiguration> {
    this.#parts.checkRules?.(rules, undefined);
    await this.#change((current, version, now) => reconfigured(current, rules, carry, version, now), undefined);
    return this.#configuration;
  }

  /** Gives `key` rules of its own for every node (see #change); the key's decisions learn of it. */
  async override(key: string, rules: readonly Algorithm[]): Promise<void> {
    this.#parts.checkRules?.(rules, key);
    await this.#change((current, version, now) => overridden(current, key, rules, version, now), key);
    // One key: its states move now, at the change, as the memory store moves them (not at its next touch).
    await this.#carryFirst(key);
  }

  /** Takes `key`'s override away for every node, carrying what it used back; no override: nothing. */
  async removeOverride(key: string): Promise<void> {
    await this.#change(
      (current, version, now) => (current.overrides.has(key) ? withoutOverride(current, key, version, now) : undefined),
      key,
    );
    await this.#carryFirst(key);
  }

  /** Every override in force, as stored, in key order. */
  async overrides(): Promise<Array<{ key: string; rules: readonly Algorithm[] }>> {
    const config = await this.#stored.inForce(this.#config, 1, this.#parts.report);
    if (config !== undefined) this.#adopt(config);
    return [...this.#config.overrides]
      .map(([key, rules]) => ({ key, rules: rules.map((e) => e.rule) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** Makes a change for every node (see StoredConfiguration.change): another node's change first is a CONFLICT. */
  async #change(
    make: (current: LiveConfig, version: number, nowMs: number) => LiveConfig | undefined,
    key: string | undefined,
  ): Promise<void> {
    const { localClock, report } = this.#parts;
    await this.#stored.change(
      this.#config,
      (current, version) => make(current, version, localClock.now()),
      key,
      (config) => this.#adopt(config),
      report,
    );
  }

  /**
   * The engine said the configuration is at `version` or later: the binding of the configuration in force,
   * read from the engine (once for every stale answer arriving meanwhile), or undefined when it cannot be read.
   */
  readonly #onStale = (version: number): Promise<BoundStore | undefined> => {
    if (this.#config.version >= version) return Promise.resolve(this);
    // A version ahead of the stored record means the record was lost: inForce stores it again, above it.
    this.#reading ??= this.#stored
      .inForce(this.#config, version, this.#parts.report)
      .then((config) => {
        if (config !== undefined) this.#adopt(config);
        return this as BoundStore;
      })
      .catch((error: unknown) => {
        this.#parts.report(asError(error));
        return undefined;
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  };

  /** A binding of `rules` at the current version (which it follows while its rules stay in force). */
  #hold(rules: readonly LiveRule[], override: boolean, apart: string | undefined): Held {
    const holder = { version: this.#config.version };
    const binding = this.#parts.bindVersion({ rules, override, version: () => holder.version, apart }, this.#onStale);
    return { binding, signature: signatureOf(rules), holder };
  }

  /**
   * Decides under `config` from now on: a binding whose rules are unchanged follows the new version (its
   * cached denials dropped); one whose rules changed is replaced, and calls it still has queued are sent
   * under its own version, so a slot answers them stale and they are asked again here.
   */
  #adopt(config: LiveConfig): void {
    if (config.version <= this.#config.version) return;
    const before = this.#config;
    this.#config = config;
    this.#configuration = { version: config.version, rules: config.rules.map((entry) => entry.rule) };
    this.#inner = this.#follow(this.#inner, config.rules, false, undefined);
    // A key whose override was set or removed lets go of what the limiter's binding held for it (a leased
    // node's lease goes back before the key's states are carried to its new rules).
    for (const key of new Set([...before.overrides.keys(), ...config.overrides.keys()])) {
      if (before.overrides.has(key) !== config.overrides.has(key)) this.#inner.binding.forget(key);
    }
    for (const [key, held] of this.#own) {
      const own = config.overrides.get(key);
      if (own !== undefined && signatureOf(own) === held.signature) {
        this.#follow(held, own, true, undefined);
      } else {
        held.binding.unbind();
        this.#own.delete(key);
      }
    }
    this.#carrier.adopt(config);
    this.#parts.adopted(this.#configuration);
  }

  /** `held` at the current version when its rules are `rules`, else a new binding of them (and `held` let go). */
  #follow(held: Held, rules: readonly LiveRule[], override: boolean, apart: string | undefined): Held {
    if (signatureOf(rules) === held.signature) {
      held.holder.version = this.#config.version;
      held.binding.forgetAll();
      return held;
    }
    held.binding.unbind();
    return this.#hold(rules, override, apart ?? `g${this.#config.version}`);
  }

  /** The carry of `key`'s states to the rules it is decided by, while a change's carry window is open. */
  #carryFirst(key: string): Promise<void> | undefined {
    return this.#carrier.carryFirst(key);
  }
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
