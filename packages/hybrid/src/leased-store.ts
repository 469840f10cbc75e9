import { type Clock, SluiceError, type Store } from '@sluice/core';
import {
  type AccessListBinding,
  type AccessListStore,
  type BoundStore,
  type LimitedKeysBinding,
  type LimitedKeysStore,
  type RuleSet,
  type StoreCapabilities,
  type FleetShare,
  emitSafely,
  inCall,
  parseOptions,
  type Fallback,
  LiveBinding,
  type VersionBinding,
  type VersionRules,
  ExactBinding,
  type EngineHost,
  type FleetPresence,
  decodeIdentity,
  encodeIdentity,
  hostParts,
  identityOf,
} from '@sluice/core/internal';
import { randomUUID } from 'node:crypto';
import { hostOfStore } from './engine-choice.js';
import { StoreEmitter } from './store-emitter.js';
import { LeasedBinding } from './leased-binding.js';
import { type LeaseContext, type LeaseLive, type LeaseSettings, leaseStateName } from './leased-context.js';
import type { LeasedEvents } from './leased-events.js';
import { LEASED_STORE_OPTIONS, type LeasedStoreOptions } from './leased-options.js';
import { LimiterTables } from './limiter-tables.js';

import { hybridRule } from './supported-rule.js';

/** What a leased store cannot do: a lease of one rule says nothing about another's; a ban must hold fleet-wide. */
const LEASED_CAPABILITIES: StoreCapabilities = { name: 'leasedStore', policies: false, plans: false, bans: false };

/**
 * Leased mode's store (leasedStore): the bucket lives in Redis, this node spends leased batches locally. Every
 * permit it grants was debited centrally first, so the fleet admits at most the central limit plus what nodes
 * hold (at most one batch each); a node that dies strands at most its batch. Built from the parts every
 * Redis-backed store shares: one health machine, one fail mode holding this node's share of the fleet's limit,
 * one presence in the fleet, one start-up check, and exact mode's binding for keys too cold for a lease.
 * @example
 * const store = leasedStore({ redis }) // a LeasedStore
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 1_000, refillPerSecond: 100 }), store })
 */
export class LeasedStore extends StoreEmitter<LeasedEvents> implements Store, LimitedKeysStore, AccessListStore {
  /** The clock decisions are made with when it is this process's ('client' or a Clock); undefined for Redis TIME. */
  readonly clock: Clock | undefined;
  /** One rule per limiter, no plans, no bans: createLimiter refuses them, naming this store. */
  readonly capabilities = LEASED_CAPABILITIES;
  readonly #ctx: LeaseContext;
  readonly #bindings = new Set<LeasedBinding>();
  /** Each limiter's configuration (live limits), read again at ready(). */
  readonly #live = new Set<LiveBinding>();
  readonly #tables: LimiterTables;
  readonly #fallback: Fallback;
  /** failMode 'local': how many nodes share each limiter's limit (its fail mode's share). */
  readonly #presence: FleetPresence | undefined;
  /** What the engine's package gives the mode: its engine, health probe, start-up checks, lists and boards. */
  readonly #host: EngineHost;
  /**
   * Each limiter prefix's channel, where another node's change of its configuration, or a reset or refund of
   * a key, is announced: heard, a node lets go of its leases under the old rules (or of the key's spent lease)
   * at once instead of spending them first. The stop of each subscription, once it landed.
   */
  readonly #channels = new Map<string, Promise<(() => Promise<void>) | undefined>>();
  #closed = false;

  constructor(o: LeaseSettings) {
    super();
    const host = hostOfStore('leasedStore', o, (error) => emitSafely(this, 'store-error', error));
    const parts = hostParts(host, o, this, randomUUID, (healthy) => {
      // What the fail mode granted meanwhile counts on the engine from now on, as in exact mode.
      if (!healthy || o.failMode !== 'local') return;
      for (const b of this.#bindings)
        void b
          .settleFallback()
          .then((charged) => emitSafely(this, 'fallback-charged', { prefix: b.prefix, ...charged }));
    });
    this.clock = parts.decisionClock;
    this.#host = host;
    this.#ctx = {
      o,
      host,
      engine: host.engine,
      decisionClock: parts.decisionClock,
      clock: parts.localClock,
      identity: parts.identity,
      health: parts.health,
      events: this,
    };
    this.#fallback = parts.fallback;
    this.#presence = parts.presence;
    this.#tables = new LimiterTables(host, true);
  }

  /** This node's name among the lessees and in the fleet: the nodeId given, or a new one if another live process had it. */
  get nodeId(): string {
    return this.#ctx.identity.id;
  }

  /** The start-up check of the lease and hand-back scripts' commands on this limiter's keys (see RedisStore.ready). */
  async ready(): Promise<void> {
    await this.#host.checks.ready();
    // From here another node's change is heard at once; until then, at this node's next lease.
    await Promise.all([...this.#channels.values()]);
    await this.#host.subscribed();
    // Each limiter decides under its configuration as stored (limiter.reconfigure on another node).
    await Promise.all([...this.#live].map((live) => live.refresh()));
  }

  /** True while decisions past this node's leases follow failMode because Redis is away. */
  get degraded(): boolean {
    return !this.#ctx.health.healthy;
  }

  /**
   * Resolves once no lease call of this store is in flight: every reply (a prefetch's included) has been
   * credited to its lease or has failed. For a test or a measurement that must see a settled state.
   * @example
   * await limiter.tryAcquire('k') // may start a prefetch
   * await store.settled()         // its permits are now this node's
   */
  async settled(): Promise<void> {
    for (const binding of this.#bindings) await binding.settled();
  }

  bind(ruleSet: RuleSet): BoundStore {
    // A closed store opens nothing again (its subscriber, its checks).
    if (this.#closed) throw new SluiceError('CLOSED', 'leasedStore: this store is closed');
    const first = this.#tables.enrol('leasedStore', ruleSet, (rule) => ({
      lease: [rule.kind],
      adjust: [rule.kind],
      decide: [rule.kind],
      presence: this.#presence !== undefined,
    }));
    const { prefix } = ruleSet;
    const fleet = this.#presence?.track(prefix);
    const live: LiveBinding = new LiveBinding({
      engine: this.#ctx.engine,
      prefix,
      rules: [first],
      timeoutMs: this.#ctx.o.timeoutMs,
      maxKeys: this.#ctx.o.maxKeys,
      decisionClock: this.#ctx.decisionClock,
      localClock: this.#ctx.clock,
      centralName: leaseStateName,
      checkRules: (rules) => {
        for (const rule of rules) hybridRule('leasedStore', rule);
      },
      bindVersion: (rules, onStale) => this.#bindRules(prefix, rules, onStale, fleet?.share ?? { fraction: 1 }),
      report: (error) => emitSafely(this, 'store-error', error),
      adopted: ({ version, rules }) => emitSafely(this, 'reconfigured', { prefix, version, rules }),
      unbind: () => {
        fleet?.release();
        this.#live.delete(live);
        if (![...this.#live].some((other) => other.prefix === prefix)) this.#stopHearing(prefix);
      },
    });
    this.#live.add(live);
    this.#hear(prefix);
    return live;
  }

  /** Hears `prefix`'s channel (once per prefix): configuration changes, and keys reset or refunded elsewhere. */
  #hear(prefix: string): void {
    if (this.#channels.has(prefix)) return;
    const heard = (message: string) => {
      // '' is a change of the configuration (LiveBinding).
      if (message === '') {
        for (const other of this.#live) if (other.prefix === prefix) other.heard();
        return;
      }
      // A key's reset or refund on another node: a lease here that found the central state spent may be wrong now.
      const key = decodeIdentity(message);
      for (const b of this.#bindings) if (b.prefix === prefix) b.heard(key);
      emitSafely(this, 'reset-heard', { prefix, key });
    };
    // Not heard (the engine could not subscribe): a change reaches this node at its next lease instead.
    this.#channels.set(
      prefix,
      this.#host.engine.subscribe(prefix, heard).catch(() => undefined),
    );
  }

  #stopHearing(prefix: string): void {
    const subscribed = this.#channels.get(prefix);
    this.#channels.delete(prefix);
    void subscribed?.then((stop) => stop?.()).catch(() => undefined);
  }

  /** A leased binding of one set of rules of a limiter (its rules, or one key's override): see LiveBinding. */
  #bindRules(
    prefix: string,
    { rules, override, version, apart }: VersionRules,
    onStale: (version: number) => Promise<BoundStore | undefined>,
    share: FleetShare,
  ): VersionBinding {
    const entry = rules[0] as (typeof rules)[number];
    const rule = hybridRule('leasedStore', entry.rule);
    const centralName = leaseStateName(entry.state);
    const ruleSet = apart === undefined ? { rules: [rule], prefix } : { rules: [rule], prefix, apart };
    const fallback = this.#fallback.bind(ruleSet, share);
    const exact = new ExactBinding({
      engine: this.#ctx.engine,
      prefix,
      rules: [rule],
      stateName: () => centralName,
      version,
      timeoutMs: this.#ctx.o.timeoutMs,
      decisionClock: this.#ctx.decisionClock,
      localClock: this.#ctx.clock,
      probeKey: (key) => this.#host.probeKey(prefix, identityOf(rule, key), centralName),
      health: this.#ctx.health,
      // One fail mode for the key, whether it was decided by lease or exactly.
      fallback,
      denials: undefined,
      // A refund of a key the engine was denying frees leases that found it spent, on every node.
      publishRefund: (key) => this.#host.engine.publish(prefix, encodeIdentity(key)),
      onDecision: undefined,
      onStale,
      override,
      unbind: () => {},
    });
    const live: LeaseLive = { centralName, version, onStale, override };
    const binding: LeasedBinding = new LeasedBinding(this.#ctx, rule, prefix, exact, fallback, live, () => {
      fallback.unbind();
      this.#bindings.delete(binding);
    });
    this.#bindings.add(binding);
    return binding;
  }

  /** A limiter's allow and deny lists on Redis, held by every process with its prefix (see RedisAccessLists). */
  bindAccessList(prefix: string): AccessListBinding {
    return this.#tables.bindAccessList(prefix);
  }

  /** A limiter's limited-keys board on Redis, shared by every process with its prefix (see RedisBoards). */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    return this.#tables.bindLimitedKeys(prefix);
  }

  /** Hands every unspent permit back to Redis (bounded by timeoutMs per key batch), leaves the fleets, stops probing. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#bindings].map((b) => b.close()));
    await this.#presence?.close(this.#ctx.o.timeoutMs);
    this.#ctx.health.close();
    for (const prefix of [...this.#channels.keys()]) this.#stopHearing(prefix);
    await this.#host.close();
  }
}

/**
 * Leased mode as a store: the bucket lives in Redis, each node takes batches of permits in one atomic call
 * and spends them locally. About one Redis call per batch; never over the central limit (tokens are debited
 * before they are spent); a node that dies strands at most one batch. One rule per limiter (tokenBucket,
 * gcra, fixedWindow or slidingWindowCounter), no plans, no bans: createLimiter refuses them, naming the store.
 * The store emits `lease`, `store-error` and `store-recovered`; `store.close()` hands unspent permits back.
 *
 * @example
 * const store = leasedStore({ redis })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 10_000, refillPerSecond: 1_000 }), store })
 * store.on('lease', (e) => metrics.observe(e.granted))
 */
export function leasedStore(options: LeasedStoreOptions): LeasedStore {
  return inCall(
    'leasedStore',
    () => new LeasedStore(parseOptions('leasedStore options', LEASED_STORE_OPTIONS, options, true)),
  );
}
