import { randomUUID } from 'node:crypto';
import {
  type Algorithm,
  type BoundStore,
  type Clock,
  type Decision,
  MemoryStore,
  type RuleSet,
  type Store,
  type StoreCapabilities,
} from '@sluice/core';
import {
  type FleetShare,
  type ParsedOptions,
  emitSafely,
  inCall,
  parseOptions,
  registerStatus,
  sharedRule,
} from '@sluice/core/store-kit';
import { type RedisConnection, StartupChecks, storeClocks } from '@sluice/redis/store-kit';
import { EventEmitter } from 'eventemitter3';
import { DemandMeter } from './demand-meter.js';
import { DIVIDED_STORE_OPTIONS, type DividedStoreOptions } from './divided-options.js';
import { type FleetSummary, Membership } from './membership.js';
import { membershipScript } from './scripts.js';
import { hybridRule } from './supported-rule.js';
import { shareFromSummary } from './shares.js';

/** A change in a limiter's live nodes or in this node's share of its limit, as the `membership` event reports it. */
export interface MembershipEvent {
  /** The limiter's prefix and rule: a store's limiters each have a fleet of their own. */
  readonly prefix: string;
  readonly rule: string;
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

/** dividedStore's options, checked and with their defaults (see DIVIDED_STORE_OPTIONS). */
export type DivideSettings = ParsedOptions<typeof DIVIDED_STORE_OPTIONS>;

/** What every binding of a divided store shares. */
interface DivideContext {
  readonly o: DivideSettings;
  readonly redis: RedisConnection;
  /** The client clock for heartbeats, or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** What decisions run on: this process's clock (or the Clock given). */
  readonly clock: Clock;
  readonly nodeId: string;
  /** The states of every limiter of the store, each in its own namespace, bounded by maxKeys. */
  readonly memory: MemoryStore;
  /** One heartbeat for every limiter of the store (one call per slot). */
  readonly membership: Membership;
  readonly events: EventEmitter<DividedEvents>;
}

/** What a divided store cannot do: a share of one rule says nothing of another's; a ban must hold fleet-wide. */
const DIVIDED_CAPABILITIES: StoreCapabilities = { name: 'dividedStore', policies: false, plans: false, bans: false };

/**
 * Divided mode's store (dividedStore): each node enforces its share of the limit locally with the core
 * algorithm; Redis only sees heartbeats. No Redis call on the decision path. A key's state is the rule held at
 * this node's share (sharedRule, the same rule every fail mode holds a share with): carried over, never dropped
 * or refilled, when the share changes.
 * @example
 * const store = dividedStore({ redis, share: 'demand' }) // a DividedStore
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 1_000, windowMs: 1_000 }), store })
 */
export class DividedStore extends EventEmitter<DividedEvents> implements Store {
  /** Decisions are this process's: limiters wait on the same clock. */
  readonly clock: Clock;
  /** One rule per limiter, no plans, no bans: createLimiter refuses them, naming this store. */
  readonly capabilities = DIVIDED_CAPABILITIES;
  /** This node's id in the membership. */
  readonly nodeId: string;
  readonly #ctx: DivideContext;
  readonly #bindings = new Set<DividedBinding>();
  /** The heartbeat reports failures itself; listening only keeps a client from printing each one. */
  readonly #unwatch: () => void;
  readonly #checks: StartupChecks;

  constructor(o: DivideSettings) {
    super();
    const { decisionClock, localClock } = storeClocks(o.clock);
    this.clock = localClock;
    this.nodeId = o.nodeId ?? randomUUID();
    this.#ctx = {
      o,
      redis: o.redis,
      decisionClock,
      clock: localClock,
      nodeId: this.nodeId,
      memory: new MemoryStore({ clock: localClock, maxKeys: o.maxKeys }),
      membership: new Membership({
        redis: o.redis,
        nodeId: this.nodeId,
        heartbeatMs: o.heartbeatMs,
        clock: decisionClock,
      }),
      events: this,
    };
    this.#checks = new StartupChecks(o.redis, o.timeoutMs, (error) => emitSafely(this, 'store-error', error));
    this.#unwatch = o.redis.watch(
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
    this.#checks.add(ruleSet.prefix, [membershipScript()]);
    const binding: DividedBinding = new DividedBinding(this.#ctx, rule, ruleSet.prefix, () =>
      this.#bindings.delete(binding),
    );
    this.#bindings.add(binding);
    return binding;
  }

  /** Leaves every membership (one last call per slot, so the others take up these shares at their next heartbeat). */
  async close(): Promise<void> {
    const bindings = [...this.#bindings];
    this.#bindings.clear();
    for (const binding of bindings) binding.release();
    await this.#ctx.membership.close();
    this.#unwatch();
  }
}

/** One limiter on a divided store: its rule held at this node's share, the share from its membership. */
class DividedBinding implements BoundStore, FleetShare {
  readonly #ctx: DivideContext;
  readonly #rule: Algorithm;
  readonly #prefix: string;
  readonly #bound: BoundStore;
  readonly #meter: DemandMeter;
  readonly #leave: () => Promise<void>;
  readonly #forget: () => void;
  #fraction: number;
  #nodes = 0;
  #failing = false;
  #closed = false;
  readonly source = 'share';
  /** Takes this binding off the list metrics read (its share and whether heartbeats fail). */
  readonly #unlist: () => void;

  constructor(ctx: DivideContext, rule: Algorithm, prefix: string, forget: () => void) {
    this.#ctx = ctx;
    this.#rule = rule;
    this.#prefix = prefix;
    this.#forget = forget;
    const { o, clock } = ctx;
    // Until the membership is seen: a conservative share, never the whole limit.
    this.#fraction = 1 / o.assumedNodes;
    this.#bound = ctx.memory.bind({ rules: [sharedRule(rule, this)], prefix });
    this.#meter = new DemandMeter(o.heartbeatMs, clock.now());
    let reported = 0;
    this.#leave = ctx.membership.join({
      prefix,
      rule: rule.name,
      limitPerSecond: rule.ratePerSecond,
      demand: () => (reported = this.#meter.perSecond(clock.now())),
      answered: (summary) => this.#onSummary(summary, reported),
      failed: (error) => {
        if (this.#failing) return;
        this.#failing = true;
        emitSafely(ctx.events, 'store-error', error);
      },
    });
    this.#unlist = registerStatus(prefix, this);
  }

  /** This node's fraction of the fleet's limit (the FleetShare its rule is held at). */
  get fraction(): number {
    return this.#fraction;
  }

  /** True while heartbeats fail: this node keeps enforcing its last share, blind to the fleet. */
  get degraded(): boolean {
    return this.#failing;
  }

  /** This node's fraction of the fleet's limit (`sluice.divided.share`). */
  get share(): number {
    return this.#fraction;
  }

  /** A heartbeat's answer: the share this node's reported demand gets in its fleet's division. */
  #onSummary(summary: FleetSummary, demand: number): void {
    if (this.#failing) {
      this.#failing = false;
      emitSafely(this.#ctx.events, 'store-recovered');
    }
    const fraction = shareFromSummary(this.#ctx.o.share, summary, demand, this.#rule.ratePerSecond);
    if (fraction === this.#fraction && summary.nodes === this.#nodes) return;
    this.#nodes = summary.nodes;
    this.#fraction = fraction;
    emitSafely(this.#ctx.events, 'membership', {
      prefix: this.#prefix,
      rule: this.#rule.name,
      nodes: summary.nodes,
      share: fraction,
    });
  }

  consume(key: string, permits: number, maxWaitMs: number): Decision {
    this.#meter.add(permits, this.#ctx.clock.now());
    return this.#bound.consume(key, permits, maxWaitMs) as Decision;
  }

  peek(key: string): Decision {
    return this.#bound.peek(key) as Decision;
  }

  reset(key: string): void {
    void this.#bound.reset(key);
  }

  /** Gives back to this node's share of the key (its own state, under its current share). */
  refund(key: string, permits: number, grantedAgoMs: number): void {
    void this.#bound.refund?.(key, permits, grantedAgoMs);
  }

  /** Takes from this node's share of the key, past it if need be: this node denies the key until it drains. */
  penalize(key: string, permits: number): void {
    void this.#bound.penalize?.(key, permits);
  }

  /** The limiter closed: it leaves its membership (one last call), so the others take up its share. */
  async unbind(): Promise<void> {
    if (this.#closed) return;
    this.release();
    await this.#leave();
  }

  /** Lets go of what the store holds for this limiter (the store's close leaves every membership at once). */
  release(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unlist();
    this.#forget();
    void this.#bound.unbind?.();
  }
}

/**
 * Divided mode as a store: each node enforces its share of the limit locally with the core algorithm; the
 * share comes from heartbeats in Redis. No Redis call on the decision path; approximate (a membership change
 * takes up to 2 heartbeats to reach every node). When Redis is unreachable a node keeps its last share. One
 * rule per limiter, no plans, no bans: createLimiter refuses them, naming the store. The store emits
 * `membership`, `store-error` and `store-recovered`; `store.close()` leaves the membership.
 *
 * @example
 * const store = dividedStore({ redis, share: 'demand' })
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 10_000, windowMs: 1_000 }), store })
 */
export function dividedStore(options: DividedStoreOptions): DividedStore {
  return inCall(
    'dividedStore',
    () => new DividedStore(parseOptions('dividedStore options', DIVIDED_STORE_OPTIONS, options, true)),
  );
}
