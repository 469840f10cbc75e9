import {
  type Algorithm,
  type BoundStore,
  type Clock,
  type Decision,
  type RuleSet,
  type Store,
  type StoreCapabilities,
  systemClock,
} from '@sluice/core';
import { emitSafely, keyCache, registerStatus, ruleDecision, scaledRule } from '@sluice/core/store-kit';
import { type RedisConnection, StartupChecks, stateKey } from '@sluice/redis/store-kit';
import { EventEmitter } from 'eventemitter3';
import type { LRUCache } from 'lru-cache';
import { DemandMeter } from './demand-meter.js';
import { Membership } from './membership.js';
import { heartbeatScript } from './scripts.js';
import { hybridRule } from './supported-rule.js';
import { type NodeDemand, type ShareMode, divideShares } from './shares.js';

/** A change in the live nodes or in this node's share, as the `membership` event reports it. */
export interface MembershipEvent {
  readonly nodes: number;
  /** This node's fraction of the limit. */
  readonly share: number;
}

/** Events of a divided limiter (it is an EventEmitter): membership changes and heartbeat failures. */
export interface DividedEvents {
  membership: [MembershipEvent];
  /** A heartbeat failed: this node keeps its last share until one succeeds (the same event on every mode). */
  'store-error': [Error];
  /** A heartbeat was answered again after a failure. */
  'store-recovered': [];
  /** A callback of yours (a listener of these events) threw; the limiter went on. */
  'callback-error': [error: unknown, callback: string];
}

/** dividedStore's options, checked and with their defaults; `events` is where the store's events go (itself by default). */
export interface DivideSettings {
  redis: RedisConnection;
  heartbeatMs: number;
  share: ShareMode;
  assumedNodes: number;
  clock: Clock | undefined;
  maxKeys: number;
  nodeId: string;
  events?: EventEmitter<DividedEvents>;
}

/** The settings a store's bindings read: `events` resolved. */
type Settings = DivideSettings & { readonly events: EventEmitter<DividedEvents> };

/** What a divided store cannot do: a share of one rule says nothing of another's; a ban must hold fleet-wide. */
const DIVIDED_CAPABILITIES: StoreCapabilities = { name: 'dividedStore', policies: false, plans: false, bans: false };

/** A key's state under the share it was last decided with. */
interface Entry {
  readonly fraction: number;
  readonly state: unknown;
}

/**
 * Divided mode's store (dividedStore; dividedLimiter makes one of its own): each node enforces its share of the
 * limit locally with the core algorithm; Redis only sees heartbeats. No Redis call on the decision path.
 * @example
 * const store = dividedStore({ redis, share: 'demand' }) // a DividedStore
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 1_000, windowMs: 1_000 }), store })
 */
export class DividedStore extends EventEmitter<DividedEvents> implements Store {
  readonly clock: Clock;
  /** One rule per limiter, no plans, no bans: createLimiter refuses them, naming this store. */
  readonly capabilities = DIVIDED_CAPABILITIES;
  readonly #o: Settings;
  readonly #bindings: DividedBinding[] = [];
  /** The heartbeat reports failures itself; listening only keeps a client from printing each one. */
  readonly #unwatch: () => void;
  readonly #checks: StartupChecks;

  constructor(options: DivideSettings) {
    super();
    const events = options.events ?? this;
    this.#o = { ...options, events };
    this.clock = options.clock ?? systemClock;
    // A heartbeat's own deadline is its interval; a start-up check may take longer (StartupChecks' minimum).
    this.#checks = new StartupChecks(options.redis, options.heartbeatMs, (error) =>
      emitSafely(events, 'store-error', error),
    );
    this.#unwatch = options.redis.watch(
      () => {},
      () => {},
    );
  }

  /** The start-up check of the heartbeat script's commands on this limiter's keys (see RedisStore.ready). */
  ready(): Promise<void> {
    return this.#checks.ready();
  }

  bind(ruleSet: RuleSet): BoundStore {
    const rule = hybridRule('dividedStore', ruleSet.rules[0] as Algorithm);
    this.#checks.add(ruleSet.prefix, [heartbeatScript()]);
    const binding = new DividedBinding(this.#o, this.clock, rule, ruleSet.prefix);
    this.#bindings.push(binding);
    return binding;
  }

  /** Leaves every membership (one last call each, so the others take up this share at their next heartbeat). */
  async close(): Promise<void> {
    await Promise.all(this.#bindings.splice(0).map((binding) => binding.close()));
    this.#unwatch();
  }
}

class DividedBinding implements BoundStore {
  readonly #o: Settings;
  readonly #clock: Clock;
  readonly #rule: Algorithm;
  readonly #entries: LRUCache<string, Entry>;
  readonly #meter: DemandMeter;
  readonly #membership: Membership;
  #fraction: number;
  #scaled: Algorithm;
  #nodes = 0;
  #failing = false;
  readonly source = 'share';
  /** Takes this binding off the list metrics read (its share and whether heartbeats fail). */
  readonly #unlist: () => void;

  constructor(o: Settings, clock: Clock, rule: Algorithm, prefix: string) {
    this.#o = o;
    this.#clock = clock;
    this.#rule = rule;
    this.#entries = keyCache<string, Entry>(o.maxKeys);
    this.#meter = new DemandMeter(o.heartbeatMs, clock.now());
    // Until the membership is seen: a conservative share, never the whole limit.
    this.#fraction = 1 / o.assumedNodes;
    this.#scaled = scaledRule(rule, this.#fraction);
    this.#membership = new Membership({
      redis: o.redis,
      // '~' never appears in a rule name: no exact-mode state key can be one of these.
      membersKey: stateKey(prefix, 'divided', `members~${rule.name}`),
      demandKey: stateKey(prefix, 'divided', `demand~${rule.name}`),
      nodeId: o.nodeId,
      heartbeatMs: o.heartbeatMs,
      clock: o.clock,
      demand: () => this.#meter.perSecond(this.#clock.now()),
      onMembers: (members) => this.#onMembers(members),
      onError: (error) => {
        if (this.#failing) return;
        this.#failing = true;
        emitSafely(o.events, 'store-error', error);
      },
    });
    this.#unlist = registerStatus(prefix, this);
  }

  /** True while heartbeats fail: this node keeps enforcing its last share, blind to the fleet. */
  get degraded(): boolean {
    return this.#failing;
  }

  /** This node's fraction of the fleet's limit (`sluice.divided.share`). */
  get share(): number {
    return this.#fraction;
  }

  #onMembers(members: readonly NodeDemand[]): void {
    if (this.#failing) {
      this.#failing = false;
      emitSafely(this.#o.events, 'store-recovered');
    }
    const shares = divideShares(this.#o.share, members, this.#rule.ratePerSecond);
    const fraction = shares.get(this.#o.nodeId);
    if (fraction === undefined || !(fraction > 0)) return;
    if (fraction === this.#fraction && members.length === this.#nodes) return;
    this.#nodes = members.length;
    if (fraction !== this.#fraction) {
      this.#fraction = fraction;
      this.#scaled = scaledRule(this.#rule, fraction);
    }
    emitSafely(this.#o.events, 'membership', { nodes: members.length, share: fraction });
  }

  /** The key's state carried over to the current share: scaled, never refilled. */
  #state(key: string, touch = true): unknown {
    const entry = touch ? this.#entries.get(key) : this.#entries.peek(key);
    if (entry === undefined) return undefined;
    // Carried over to the current share: scaled by the ratio of the shares, never refilled.
    return entry.fraction === this.#fraction
      ? entry.state
      : this.#rule.rescale(entry.state, this.#fraction / entry.fraction);
  }

  consume(key: string, permits: number, maxWaitMs: number): Decision {
    const now = this.#clock.now();
    this.#meter.add(permits, now);
    const out = this.#scaled.consume(this.#state(key), now, permits, maxWaitMs);
    this.#keep(key, out.state);
    // The fleet's limit, this node's remaining: the decision is local.
    return ruleDecision(this.#rule, out);
  }

  peek(key: string): Decision {
    const probe = this.#scaled.consume(this.#state(key, false), this.#clock.now(), 1, 0);
    return { ...ruleDecision(this.#rule, probe), remaining: probe.allowed ? probe.remaining + 1 : probe.remaining };
  }

  reset(key: string): void {
    this.#entries.delete(key);
  }

  /** Gives back to this node's share of the key (its own state, under its current share). */
  refund(key: string, permits: number, grantedAgoMs: number): void {
    const state = this.#state(key);
    if (state === undefined) return;
    const now = this.#clock.now();
    this.#keep(key, this.#scaled.refund(state, now, permits, now - grantedAgoMs).state);
  }

  /** Takes from this node's share of the key, past it if need be: this node denies the key until it drains. */
  penalize(key: string, permits: number): void {
    this.#keep(key, this.#scaled.penalize(this.#state(key), this.#clock.now(), permits).state);
  }

  #keep(key: string, state: unknown): void {
    if (state === undefined) this.#entries.delete(key);
    else this.#entries.set(key, { fraction: this.#fraction, state });
  }

  async close(): Promise<void> {
    this.#unlist();
    await this.#membership.stop();
  }
}
