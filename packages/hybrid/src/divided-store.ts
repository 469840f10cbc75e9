import {
  type Algorithm,
  type BoundStore,
  type Clock,
  type Decision,
  type RuleSet,
  type Store,
  systemClock,
} from '@sluice/core';
import { emitSafely, keyCache, registerStatus, ruleDecision, scaledRule } from '@sluice/core/store-kit';
import { type RedisConnection, StartupChecks, stateKey } from '@sluice/redis/store-kit';
import type { EventEmitter } from 'eventemitter3';
import type { LRUCache } from 'lru-cache';
import { DemandMeter } from './demand-meter.js';
import { Membership } from './membership.js';
import { heartbeatScript } from './scripts.js';
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

export interface DividedStoreOptions {
  redis: RedisConnection;
  heartbeatMs: number;
  share: ShareMode;
  assumedNodes: number;
  clock: Clock | undefined;
  maxKeys: number;
  nodeId: string;
  events: EventEmitter<DividedEvents>;
}

/** A key's state under the share it was last decided with. */
interface Entry {
  readonly fraction: number;
  readonly state: unknown;
}

/**
 * The store behind dividedLimiter: each node enforces its share of the limit locally with the core
 * algorithm; Redis only sees heartbeats. No Redis call on the decision path.
 */
export class DividedStore implements Store {
  readonly clock: Clock;
  readonly #o: DividedStoreOptions;
  #binding: DividedBinding | undefined;
  /** The heartbeat reports failures itself; listening only keeps a client from printing each one. */
  readonly #unwatch: () => void;
  readonly #checks: StartupChecks;

  constructor(options: DividedStoreOptions) {
    this.#o = options;
    this.clock = options.clock ?? systemClock;
    // A heartbeat's own deadline is its interval; a start-up check may take longer (StartupChecks' minimum).
    this.#checks = new StartupChecks(options.redis, options.heartbeatMs, (error) =>
      emitSafely(options.events, 'store-error', error),
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
    this.#checks.add(ruleSet.prefix, [heartbeatScript()]);
    this.#binding = new DividedBinding(this.#o, this.clock, ruleSet.rules[0] as Algorithm, ruleSet.prefix);
    return this.#binding;
  }

  /** Leaves the membership (one last call, so the others take up this share at their next heartbeat). */
  async close(): Promise<void> {
    await this.#binding?.close();
    this.#unwatch();
  }
}

class DividedBinding implements BoundStore {
  readonly #o: DividedStoreOptions;
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

  constructor(o: DividedStoreOptions, clock: Clock, rule: Algorithm, prefix: string) {
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
