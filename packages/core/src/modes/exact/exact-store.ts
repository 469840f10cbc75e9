import type { Algorithm } from '../../algorithms/algorithm.js';
import { stateName } from '../../algorithms/rule-name.js';
import type { FleetShare } from '../../algorithms/shared-rule.js';
import type { Engine } from '../../contract/engine.js';
import { PrefixGuard } from '../../engine/prefix-guard.js';
import type { BoundStore, RuleSet } from '../../engine/store.js';
import { type CallbackEmitter, callSafely, emitSafely } from '../../foundation/callbacks.js';
import type { Clock } from '../../foundation/clock.js';
import { DenyCache } from '../deny-cache.js';
import type { Fallback, FailMode } from '../fail-mode.js';
import type { EngineHealth } from '../health.js';
import { decodeIdentity, encodeIdentity } from '../key-message.js';
import { LiveBinding, type LiveParts, type VersionBinding } from '../live/live-binding.js';
import type { DecisionEvent } from '../store-events.js';
import { ExactBinding } from './exact-binding.js';
import type { BanHint, ExactParts } from './exact-parts.js';

/** A share that never moves: what 'open' and 'closed' (which keep nothing) are bound with. */
const WHOLE: FleetShare = { fraction: 1 };

/** What the engine's own store holds for a prefix beside the assembly's (Redis: a start-up check, a fleet). */
export interface PrefixExtras {
  /** This node's share of the prefix's limits for the fail mode (undefined: the whole limit). */
  readonly share?: FleetShare | undefined;
  /** Called when the prefix's last binding is released. */
  readonly release?: (() => void) | undefined;
}

/** What a store doing exact mode over an engine gives the assembly: its engine, its machines, its options. */
export interface ExactStoreParts {
  /** Decides, adjusts, keeps configurations, carries messages (its deadlines long: `timeoutMs` is the decisions'). */
  readonly engine: Engine;
  /** Where 'reset-heard', 'reconfigured', 'store-error' and 'fallback-charged' go (the store itself). */
  readonly events: CallbackEmitter;
  readonly timeoutMs: number;
  readonly maxKeys: number;
  /** Cache denials and share resets on the prefix's channel (see DenyCache). */
  readonly denyCache: boolean;
  /** The decision clock (undefined: the engine's) and this process's clock. */
  readonly decisionClock: Clock | undefined;
  readonly localClock: Clock;
  /** The store's health machine and fail mode (one each per store). */
  readonly health: EngineHealth;
  readonly fallback: Fallback;
  readonly failMode: FailMode;
  /** The store's `onDecision` option (called safely: a throw is a 'callback-error'). */
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  /** The key the health machine probes after a failure about `key` under `rule` (its state's place). */
  readonly probeKey?: ((prefix: string, rule: Algorithm, state: string, key: string) => string) | undefined;
  /** A prefix's ban hint (Redis: its ban markers); undefined: every allowed key's ban is asked of the engine. */
  readonly banHint?: ((prefix: string) => BanHint) | undefined;
  /** The store's own part of a prefix's first bind (its `ruleSet`), released with its last binding. */
  readonly holdPrefix?: ((ruleSet: RuleSet) => PrefixExtras) | undefined;
  /** Refuses rules the engine cannot decide (see LiveParts.checkRules). */
  readonly checkRules?: LiveParts['checkRules'];
}

/** What the assembly holds for one limiter prefix: its bindings, its channel, its place in the fleet. */
interface PrefixHold {
  readonly prefix: string;
  readonly bindings: Set<VersionBinding>;
  readonly share: FleetShare;
  /** The prefix's channel, heard until the stop resolves (undefined: not heard, subscribed again at ready()). */
  subscription: Promise<(() => Promise<void>) | undefined> | undefined;
  released: boolean;
  readonly release: () => void;
}

/**
 * Exact mode as a store assembles it over any engine (redisStore, postgresStore): per limiter prefix a hold
 * (its bindings, its place in the fleet, its channel), and per limiter an ExactBinding (a limiter with plans)
 * or a LiveBinding (live limits) whose versions are ExactBindings. A prefix's bindings share their deny caches:
 * a control under one plan drops the key from the others, and a reset, unblock or refund is published on the
 * prefix's channel (`engine.publish(prefix, encodeIdentity(key))`), so every node drops it too; '' on it
 * says the configuration changed (LiveBinding.heard). After an outage, `recovered()` charges the engine with
 * what the fail mode granted ('fallback-charged').
 * @example
 * const exact = new ExactStore({ engine, events: this, health, fallback, ...options })
 * const binding = exact.bind(ruleSet) // Store.bind
 */
export class ExactStore {
  readonly #parts: ExactStoreParts;
  readonly #holds = new Map<string, PrefixHold>();
  readonly #prefixes = new PrefixGuard();
  readonly #onDecision: ((event: DecisionEvent) => void) | undefined;

  constructor(parts: ExactStoreParts) {
    this.#parts = parts;
    const onDecision = parts.onDecision;
    this.#onDecision =
      onDecision === undefined ? undefined : (event) => callSafely(parts.events, 'onDecision', onDecision, event);
  }

  /**
   * Resolves once each prefix's channel is heard (one not heard is subscribed again) and each limiter decides
   * under its configuration as stored (limiter.reconfigure on another node); rejects when one cannot be read.
   */
  async ready(): Promise<void> {
    const holds = [...this.#holds.values()];
    if (this.#parts.denyCache) for (const hold of holds) if (hold.subscription === undefined) this.#listen(hold);
    await Promise.all(holds.map((hold) => hold.subscription));
    const live = holds.flatMap((hold) => [...hold.bindings]);
    await Promise.all(live.map((b) => (b instanceof LiveBinding ? b.refresh() : undefined)));
  }

  /** The engine answers again: a channel not heard is subscribed again; failMode 'local' charges its grants. */
  recovered(): void {
    if (this.#parts.denyCache)
      for (const hold of this.#holds.values()) if (hold.subscription === undefined) this.#listen(hold);
    if (this.#parts.failMode !== 'local') return;
    for (const [prefix, hold] of this.#holds)
      for (const b of hold.bindings)
        void b
          .settleFallback()
          .then((charged) => emitSafely(this.#parts.events, 'fallback-charged', { prefix, ...charged }));
  }

  /** Stops hearing every prefix's channel (limiters still bound decide on, without their messages). */
  async close(): Promise<void> {
    const holds = [...this.#holds.values()];
    await Promise.all(holds.map((hold) => this.#unlisten(hold)));
  }

  /** Hears the prefix's channel: a configuration change ('') or a key's reset. */
  #listen(hold: PrefixHold): void {
    const { engine, events } = this.#parts;
    const { prefix } = hold;
    const subscription = engine
      .subscribe(prefix, (message) => {
        if (message === '') {
          // No key encodes to '': another node changed the limiter's configuration (LiveBinding.reconfigure),
          // and denials cached under the rules before it may not hold.
          for (const b of hold.bindings) if (b instanceof LiveBinding) b.heard();
          return;
        }
        const key = decodeIdentity(message);
        for (const b of hold.bindings) b.forget(key);
        emitSafely(events, 'reset-heard', { prefix, key });
      })
      .then(
        (stop) => {
          // Released while subscribing: stop at once.
          if (hold.released) void stop().catch(() => undefined);
          return stop;
        },
        () => {
          // Not heard for now (the engine away): ready() and recovered() subscribe again; meanwhile a cached
          // denial is trusted only DENY_CACHE_TRUST_MS, and a stale answer brings a configuration change.
          if (hold.subscription === subscription) hold.subscription = undefined;
          return undefined;
        },
      );
    hold.subscription = subscription;
  }

  async #unlisten(hold: PrefixHold): Promise<void> {
    const stop = await hold.subscription;
    hold.subscription = undefined;
    await stop?.().catch(() => undefined);
  }

  /** What the assembly holds for `ruleSet`'s prefix, made on its first bind. */
  #hold(ruleSet: RuleSet): PrefixHold {
    const { prefix } = ruleSet;
    const held = this.#holds.get(prefix);
    if (held !== undefined) return held;
    const extras = this.#parts.holdPrefix?.(ruleSet);
    const hold: PrefixHold = {
      prefix,
      bindings: new Set(),
      share: extras?.share ?? WHOLE,
      subscription: undefined,
      released: false,
      release: () => {
        hold.released = true;
        this.#holds.delete(prefix);
        void this.#unlisten(hold);
        extras?.release?.();
      },
    };
    if (this.#parts.denyCache) this.#listen(hold);
    this.#holds.set(prefix, hold);
    return hold;
  }

  /** Binds a limiter's rules under its prefix (see Store.bind): its plans, or its live rules. */
  bind(ruleSet: RuleSet): BoundStore {
    const { prefix } = ruleSet;
    // A limiter with plans claims its prefix for every plan's rules (they share state by name).
    const releaseClaim = this.#prefixes.claim(prefix, ruleSet.plans ?? ruleSet.rules);
    const hold = this.#hold(ruleSet);
    const bindings = hold.bindings;
    // A closed limiter's binding: dropped with its caches; the prefix's hold when it was the last.
    const release = (binding: VersionBinding) => {
      releaseClaim();
      if (bindings.delete(binding) && bindings.size === 0) hold.release();
    };
    if (ruleSet.plans !== undefined) {
      // A limiter with plans keeps the rules it was created with (its rules cannot change at run time).
      const binding: ExactBinding = this.#exactBinding(ruleSet, hold, {
        stateName,
        version: undefined,
        onStale: undefined,
        unbind: () => release(binding),
      });
      bindings.add(binding);
      return binding;
    }
    const p = this.#parts;
    const live: LiveBinding = new LiveBinding({
      engine: p.engine,
      prefix,
      checkRules: p.checkRules,
      rules: ruleSet.rules,
      timeoutMs: p.timeoutMs,
      maxKeys: p.maxKeys,
      decisionClock: p.decisionClock,
      localClock: p.localClock,
      bindVersion: ({ rules: entries, override, version, apart }, onStale) => {
        const states = new Map(entries.map((entry) => [entry.rule, entry.state]));
        // The fail mode's states of other rules are apart from the limiter's first ones (it starts them afresh).
        const rules = entries.map((entry) => entry.rule);
        return this.#exactBinding(apart === undefined ? { rules, prefix } : { rules, prefix, apart }, hold, {
          stateName: (rule) => states.get(rule) ?? stateName(rule),
          version,
          onStale,
          override,
          unbind: () => undefined,
        });
      },
      report: (error) => emitSafely(p.events, 'store-error', error),
      adopted: ({ version, rules }) => emitSafely(p.events, 'reconfigured', { prefix, version, rules }),
      unbind: () => release(live),
    });
    bindings.add(live);
    return live;
  }

  /** One limiter's exact decisions under one set of rules (see ExactBinding). */
  #exactBinding(
    ruleSet: RuleSet,
    hold: PrefixHold,
    own: Pick<ExactParts, 'onStale' | 'unbind' | 'override' | 'stateName' | 'version'>,
  ): ExactBinding {
    const p = this.#parts;
    const { prefix } = ruleSet;
    const bindings = hold.bindings;
    const first = ruleSet.rules[0] as Algorithm;
    const probeKey = p.probeKey;
    return new ExactBinding({
      engine: p.engine,
      prefix,
      rules: ruleSet.rules,
      stateName: own.stateName,
      version: own.version,
      timeoutMs: p.timeoutMs,
      localClock: p.localClock,
      // A failure about a key is probed where its state lives.
      probeKey: probeKey === undefined ? (key) => key : (key) => probeKey(prefix, first, own.stateName(first), key),
      banHint: p.banHint?.(prefix),
      decisionClock: p.decisionClock,
      health: p.health,
      fallback: p.fallback.bind(ruleSet, hold.share),
      denials: p.denyCache
        ? {
            cache: new DenyCache(p.maxKeys),
            // A limiter's plans are bindings of one prefix: a control under one plan changes what the others cached.
            forgetHere: (key) => {
              for (const b of bindings) b.forget(key);
            },
            publishReset: (key) => p.engine.publish(prefix, encodeIdentity(key)),
          }
        : undefined,
      onDecision: this.#onDecision,
      onStale: own.onStale,
      override: own.override,
      unbind: own.unbind,
    });
  }
}
