import { randomUUID } from 'node:crypto';
import {
  type Algorithm,
  type BoundStore,
  type CarryMode,
  type Clock,
  type Decision,
  type GrantSource,
  type AccessListBinding,
  type AccessListStore,
  type LimitedKeysBinding,
  type LimitedKeysStore,
  type Permits,
  type LimiterConfiguration,
  MemoryStore,
  type RuleSet,
  type SharedRules,
  SluiceError,
  type Store,
  type StoreCapabilities,
  systemClock,
} from '@sluice/core';
import {
  CarriedBinding,
  type DecisionNote,
  type FleetShare,
  type ParsedOptions,
  carryWindowMs,
  emitSafely,
  hasStateAccess,
  inCall,
  permitsOfRule,
  parseOptions,
  registerStatus,
  sharedRule,
  stateName,
  warnOnce,
  mostPermits,
} from '@sluice/core/store-kit';
import type { FallbackChargedEvent, StoreEvents } from '@sluice/redis';
import {
  Fallback,
  type FallbackBinding,
  KeyCarrier,
  type LiveConfig,
  type LiveRule,
  NodeIdentity,
  type RedisConnection,
  RedisAccessLists,
  RedisBoards,
  RedisHealth,
  StartupChecks,
  StoreEmitter,
  StoredConfiguration,
  adjustScript,
  firstConfig,
  reconfigured,
  storeClocks,
  withDeadline,
  writeDescriptor,
} from '@sluice/redis/store-kit';
import type { EventEmitter } from 'eventemitter3';
import { DemandMeter } from './demand-meter.js';
import { DIVIDED_STORE_OPTIONS, type DividedStoreOptions } from './divided-options.js';
import { type FleetSummary, Membership } from './membership.js';
import { Reserve, reserveStateName } from './reserve.js';
import { spentWhereMissing, untilSpentFrees } from './unseen-keys.js';
import { leaseScript, membershipScript } from './scripts.js';
import { hybridRule } from './supported-rule.js';
import { allocatedFraction, awayFraction, localFraction } from './shares.js';

/** A change in a limiter's live nodes or in this node's share of its limit, as the `membership` event reports it. */
export interface MembershipEvent {
  /** The limiter's prefix and rule: a store's limiters each have a fleet of their own. */
  readonly prefix: string;
  readonly rule: string;
  readonly nodes: number;
  /** This node's fraction of the limit. */
  readonly share: number;
}

/**
 * Events of a divided limiter (it is an EventEmitter): those of every Redis-backed store (StoreEvents: a
 * heartbeat or a draw failing and Redis answering again, a configuration learned at a heartbeat, the reserve's
 * outage grants charged, a callback that threw) and divided mode's own. While Redis fails this node keeps its
 * last share and holds its part of the reserve locally.
 */
export interface DividedEvents extends StoreEvents {
  membership: [MembershipEvent];
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
  /** This node's id in its fleets (a new one if another live process was given the same). */
  readonly identity: NodeIdentity;
  /** The states of every limiter of the store, each in its own namespace, bounded by maxKeys. */
  readonly memory: MemoryStore;
  /** With a reserve: each node's part of it, held here while Redis is away (failMode 'local' of the other modes). */
  readonly away: Fallback;
  /** One heartbeat for every limiter of the store (one call per slot). */
  readonly membership: Membership;
  readonly events: EventEmitter<DividedEvents>;
}

/**
 * The most heartbeats per second a divided fleet may send its Redis before it is warned (SLUICE_FLEET_HEARTBEATS):
 * at about 20 us each (bench/results/presence.json) a tenth of a Redis core, for one limiter.
 */
const MAX_FLEET_HEARTBEATS_PER_SECOND = 5_000;

/** The weight of the latest interval in a divided node's reported demand (see DemandMeter). */
const DEMAND_WEIGHT = 0.125;

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
export class DividedStore extends StoreEmitter<DividedEvents> implements Store, LimitedKeysStore, AccessListStore {
  /** Decisions are this process's: limiters wait on the same clock. */
  readonly clock: Clock;
  /** One rule per limiter, no plans, no bans: createLimiter refuses them, naming this store. */
  readonly capabilities = DIVIDED_CAPABILITIES;
  readonly #ctx: DivideContext;
  readonly #bindings = new Set<DividedBinding>();
  readonly #checks: StartupChecks;
  readonly #boards: RedisBoards;
  readonly #lists: RedisAccessLists;

  constructor(o: DivideSettings) {
    super();
    const { decisionClock, localClock } = storeClocks(o.clock);
    this.clock = localClock;
    const identity = new NodeIdentity(o.nodeId ?? randomUUID(), (error) => emitSafely(this, 'store-error', error));
    this.#ctx = {
      o,
      redis: o.redis,
      decisionClock,
      clock: localClock,
      identity,
      memory: new MemoryStore({ clock: localClock, maxKeys: o.maxKeys }),
      away: new Fallback({ mode: 'local', clock: localClock, maxKeys: o.maxKeys, timeoutMs: o.timeoutMs }),
      membership: new Membership({
        redis: o.redis,
        identity,
        heartbeatMs: o.heartbeatMs,
        clock: decisionClock,
        // Decisions here run on the process's clock unless a Clock of the user's own was given.
        skewClock: localClock === systemClock ? systemClock : undefined,
      }),
      events: this,
    };
    this.#checks = new StartupChecks(o.redis, o.timeoutMs, (error) => emitSafely(this, 'store-error', error));
    this.#boards = new RedisBoards({ connection: o.redis, timeoutMs: o.timeoutMs }, this.#checks);
    // No channel: this mode keeps no subscriber per node (see DividedBinding); lists are read every refreshMs.
    this.#lists = new RedisAccessLists({
      connection: o.redis,
      timeoutMs: o.timeoutMs,
      checks: this.#checks,
      channels: undefined,
    });
  }

  /** This node's id in the membership: the nodeId given, or a new one if another live process had it. */
  get nodeId(): string {
    return this.#ctx.identity.id;
  }

  /**
   * The start-up check of the heartbeat script's commands on this limiter's keys (see RedisStore.ready);
   * then each limiter decides under its configuration as stored (limiter.reconfigure on another node).
   */
  async ready(): Promise<void> {
    await this.#checks.ready();
    await Promise.all([...this.#bindings].map((binding) => binding.refresh()));
  }

  bind(ruleSet: RuleSet): BoundStore {
    const rule = hybridRule('dividedStore', ruleSet.rules[0] as Algorithm);
    const reserveScripts = this.#ctx.o.reserve > 0 ? [leaseScript(rule.kind), adjustScript([rule.kind])] : [];
    this.#checks.add(ruleSet.prefix, [membershipScript(), ...reserveScripts]);
    // What the CLI reads to know the limiter runs here, and in which mode.
    void writeDescriptor(this.#ctx.redis, ruleSet.prefix, 'divided', [rule]);
    const binding: DividedBinding = new DividedBinding(this.#ctx, rule, ruleSet.prefix, () =>
      this.#bindings.delete(binding),
    );
    this.#bindings.add(binding);
    return binding;
  }

  /** A limiter's allow and deny lists on Redis, held by every process with its prefix (see RedisAccessLists). */
  bindAccessList(prefix: string): AccessListBinding {
    return this.#lists.bind(prefix);
  }

  /** A limiter's limited-keys board on Redis, shared by every process with its prefix (see RedisBoards). */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    return this.#boards.bind(prefix);
  }

  /** Leaves every membership (one last call per slot, so the others take up these shares at their next heartbeat). */
  async close(): Promise<void> {
    const bindings = [...this.#bindings];
    this.#bindings.clear();
    for (const binding of bindings) binding.release();
    await Promise.all([this.#ctx.membership.close(), ...bindings.map((b) => b.closeReserve())]);
  }
}

/**
 * One limiter on a divided store: its rule held at this node's share, the share from its membership. Its
 * rule is the limiter's configuration's (live limits, kept in Redis for every node of its prefix): each
 * heartbeat reads its slot's configuration version, so a change made on another node reaches this one within
 * a heartbeat (no subscriber connection per node: a fleet of hundreds would hold one each), and switches the rule in place (the local
 * states carried by the change's carry mode, the membership reporting the new limit, the reserve drawn under
 * the new generation), with no leave and rejoin of the fleet unless the rule's name changed.
 */
class DividedBinding implements BoundStore, FleetShare, SharedRules {
  readonly #ctx: DivideContext;
  /** The rule in force, the name its states live under, and the rule held at this node's share of it. */
  #rule: Algorithm;
  #state: string;
  #shared: Algorithm;
  readonly #prefix: string;
  #bound: BoundStore;
  readonly #meter: DemandMeter;
  /** The part of the limit kept in Redis for requests past this node's share (undefined: reserve 0). */
  #reserve: Reserve | undefined;
  /**
   * With a reserve, while Redis is away: this node's part of the reserve held here (awayFraction), its keys
   * starting spent; what it grants is charged to the reserve when Redis answers again.
   */
  #away: FallbackBinding | undefined;
  /** The failure that began this node's time away from Redis (undefined: it reaches Redis). */
  #awayFrom: Error | undefined;
  /** The fraction #away holds (its last positive one: a FleetShare is never 0), and whether it holds any now. */
  #awayShare = 1;
  #awayHolds = false;
  /** What the shares split: the limit less the reserve. */
  readonly #divided: number;
  #leave: () => Promise<void>;
  readonly #forget: () => void;
  #fraction: number;
  #nodes = 0;
  /** Heartbeats fail (the fleet's slot, or the connection); cleared by one answered. */
  #beatFailing = false;
  /**
   * With a reserve: whether the reserve's Redis answers (its slot may be down while the fleet's is not, in a
   * failover): failed by a draw, healthy again when its probe is answered (RedisHealth, as exact mode's).
   */
  readonly #reserveHealth: RedisHealth | undefined;
  #closed = false;
  /**
   * Whether a key this node meets for the first time starts spent (FleetShare.freshKeysSpent): decided at its
   * first heartbeat's answer, true unless that heartbeat founded the fleet (others may have spent a key).
   */
  #freshSpent: boolean | undefined;
  /** The allocation (a fraction of the limit) this node last heard as its current one, and the fraction it then held. */
  #seenCurrent: number | undefined;
  #allocated: number | undefined;
  /** Settles at the first heartbeat's answer (or failure): a new node's first decisions wait for it. */
  #heard: Promise<void> | undefined;
  #hear: () => void = () => {};
  readonly source = 'share';
  /** Takes this binding off the list metrics read (its share and whether heartbeats fail). */
  readonly #unlist: () => void;
  /** The limiter's configuration as kept in Redis, and as this node decides under it. */
  readonly #stored: StoredConfiguration;
  #config: LiveConfig;
  #configuration: LimiterConfiguration;
  /** The read of the stored configuration under way (a message and a heartbeat arriving together share it). */
  #reading: Promise<void> | undefined;

  constructor(ctx: DivideContext, rule: Algorithm, prefix: string, forget: () => void) {
    this.#ctx = ctx;
    this.#rule = rule;
    this.#state = stateName(rule);
    this.#prefix = prefix;
    this.#forget = forget;
    this.#config = firstConfig([rule]);
    this.#configuration = { version: 1, rules: [rule] };
    const { o, clock } = ctx;
    this.#stored = new StoredConfiguration({ connection: ctx.redis, prefix, timeoutMs: o.timeoutMs });
    this.#divided = 1 - o.reserve;
    // Until the fleet's divisions are seen: with a reserve, none of the divided part (the reserve serves this
    // node, exactly); without one, a conservative share, never the whole limit.
    this.#fraction = o.reserve > 0 ? 0 : 1 / o.assumedNodes;
    if (o.reserve > 0) this.#heard = new Promise((resolve) => (this.#hear = resolve));
    this.#reserveHealth =
      o.reserve > 0
        ? new RedisHealth({
            connection: ctx.redis,
            timeoutMs: o.timeoutMs,
            onChange: (healthy, error) => {
              if (!healthy) return this.#failed(error ?? new Error('the reserve did not answer'));
              this.#reserve?.resume();
              this.#recovered();
            },
          })
        : undefined;
    this.#reserve = o.reserve > 0 ? this.#makeReserve(this.#config.rules[0] as LiveRule, o.reserve) : undefined;
    this.#shared = sharedRule(rule, this);
    this.#bound = ctx.memory.bind({ rules: [this.#shared], prefix });
    this.#away = this.#bindAway(rule, undefined);
    // A share follows the node's demand over several intervals (an eighth per interval): a division that moved
    // with each interval's noise would leave the gap between two divisions' allocations to nobody (see
    // membership.lua's reserve); the reserve absorbs what the noise asks for meanwhile.
    this.#meter = new DemandMeter(o.heartbeatMs, clock.now(), DEMAND_WEIGHT);
    this.#leave = this.#join(rule.name);
    this.#unlist = registerStatus(prefix, this);
  }

  /** This node in the fleet of the rule named `name`: it reports the rule in force (its limit follows a change). */
  #join(name: string): () => Promise<void> {
    const { o, clock, membership } = this.#ctx;
    const binding = this;
    return membership.join({
      prefix: this.#prefix,
      rule: name,
      get limitPerSecond() {
        return binding.#rule.ratePerSecond;
      },
      mode: o.share,
      get burst() {
        return binding.#rule.burst;
      },
      get windowed() {
        return binding.#rule.lease?.kind !== 'bucket';
      },
      divided: this.#divided,
      demand: () => this.#meter.perSecond(clock.now()),
      knownNodes: () => this.#nodes,
      assumedNodes: o.assumedNodes,
      version: () => this.#config.version,
      answered: (summary) => this.#onSummary(summary),
      failed: (error) => {
        this.#beatFailing = true;
        this.#failed(error);
      },
    });
  }

  /** The part of the reserve this node holds while Redis is away, bound to `rule` (undefined: no reserve). */
  #bindAway(rule: Algorithm, apart: string | undefined): FallbackBinding | undefined {
    if (this.#ctx.o.reserve === 0) return undefined;
    const binding = this;
    const ruleSet =
      apart === undefined ? { rules: [rule], prefix: this.#prefix } : { rules: [rule], prefix: this.#prefix, apart };
    return this.#ctx.away.bind(ruleSet, {
      get fraction() {
        return binding.#awayShare;
      },
      // The reserve's state in Redis is unknown here: its part starts spent, refilling at its rate.
      freshKeysSpent: true,
    });
  }

  /**
   * The reserve of `entry`'s generation, at `fraction` of the limit: while its change's carry window is
   * open, a key's first draw carries the key's reserve from the generations before (its states are the rule
   * scaled to the reserve's fraction, as they were written).
   */
  #makeReserve(entry: LiveRule, fraction: number): Reserve {
    const ctx = this.#ctx;
    const { o, clock } = ctx;
    const rule = entry.rule;
    let carrier: KeyCarrier | undefined;
    if (entry.from.length > 0) {
      const scaled = (r: Algorithm) => r.share(Math.max(fraction, 1 / r.burst));
      carrier = new KeyCarrier({
        connection: ctx.redis,
        prefix: this.#prefix,
        timeoutMs: o.timeoutMs,
        maxKeys: o.maxKeys,
        decisionClock: ctx.decisionClock,
        localClock: clock,
        onStale: async () => {
          await this.refresh();
          return true;
        },
      });
      carrier.adopt({
        version: this.#config.version,
        rules: [
          {
            rule: scaled(rule),
            state: reserveStateName(entry.state),
            from: entry.from.map((link) => ({ ...link, rule: scaled(link.rule), state: reserveStateName(link.state) })),
          },
        ],
        overrides: new Map(),
        returning: new Map(),
      });
    }
    return new Reserve(
      {
        redis: ctx.redis,
        identity: ctx.identity,
        decisionClock: ctx.decisionClock,
        clock,
        timeoutMs: o.timeoutMs,
        liveMs: 3 * o.heartbeatMs,
        pauseMs: o.heartbeatMs,
        maxKeys: o.maxKeys,
        failed: (error, stateKey) => this.#reserveHealth?.reportFailure(error, stateKey),
        answered: () => this.#reserveHealth?.reportSuccess(),
        stale: () => this.heard(),
      },
      rule,
      fraction,
      this.#prefix,
      { state: entry.state, version: () => this.#config.version, carrier },
    );
  }

  get configuration(): LimiterConfiguration {
    return this.#configuration;
  }

  /**
   * Reads the stored configuration and decides under it (the store's ready(), a heartbeat that found its
   * slot at a newer version, a draw on the reserve that did). Rejects when it cannot be read or is of a
   * later format. A slot at `seen`, ahead of the stored record, means the record was lost: it is stored again
   * (see StoredConfiguration.inForce) and every node adopts it.
   */
  refresh(seen = 1): Promise<void> {
    this.#reading ??= this.#stored
      .inForce(this.#config, seen, (error) => emitSafely(this.#ctx.events, 'store-error', error))
      .then((config) => {
        if (config !== undefined) this.#adopt(config);
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /** The fleet's slot is at a newer configuration: read it (a failure keeps the last one known, and says so). */
  heard(seen = 1): void {
    this.refresh(seen).catch((error: unknown) =>
      emitSafely(this.#ctx.events, 'store-error', error instanceof Error ? error : new Error(String(error))),
    );
  }

  /** Stores `rules` for every node (see StoredConfiguration.change); each switches within a heartbeat, this one at once. */
  async reconfigure(rules: readonly Algorithm[], carry: CarryMode): Promise<LimiterConfiguration> {
    for (const rule of rules) hybridRule('dividedStore', rule);
    const { clock, events } = this.#ctx;
    await this.#stored.change(
      this.#config,
      (current, version) => reconfigured(current, rules, carry, version, clock.now()),
      undefined,
      (config) => this.#adopt(config),
      (error) => emitSafely(events, 'store-error', error),
    );
    return this.#configuration;
  }

  /**
   * Refused: an override is read with its key's state on Redis, and divided mode decides with no Redis call
   * (give such keys a limiter of their own, or use leasedStore or redisStore).
   */
  override(): Promise<void> {
    return Promise.reject(noOverrides());
  }

  removeOverride(): Promise<void> {
    return Promise.reject(noOverrides());
  }

  /** None: divided mode holds no override. */
  overrides(): Promise<ReadonlyArray<{ readonly key: string; readonly rules: readonly Algorithm[] }>> {
    return Promise.resolve([]);
  }

  /** Decides under `config` from now on (a later version than this node's); a changed rule is switched in place. */
  #adopt(config: LiveConfig): void {
    if (config.version <= this.#config.version || this.#closed) return;
    const [entry, ...more] = config.rules;
    // A record this mode cannot decide (stored by a limiter of another mode on this prefix): refused before
    // anything changes, so this node keeps deciding under the last configuration it could.
    if (entry === undefined || more.length > 0) {
      throw new SluiceError(
        'UNSUPPORTED',
        `dividedStore holds one rule per limiter; the configuration stored for ${JSON.stringify(this.#prefix)} ` +
          `(version ${config.version}) has ${config.rules.length}`,
      );
    }
    if (entry.state !== this.#state) hybridRule('dividedStore', entry.rule);
    this.#config = config;
    this.#configuration = { version: config.version, rules: config.rules.map((e) => e.rule) };
    if (entry.state !== this.#state) this.#switch(entry, config.version);
    emitSafely(this.#ctx.events, 'reconfigured', {
      prefix: this.#prefix,
      version: config.version,
      rules: this.#configuration.rules,
    });
  }

  /**
   * Decides under `entry`'s rule from now on: each key's local state is carried from the rule before on its
   * first touch (CarriedBinding, by the change's carry mode; a new name starts fresh), the membership reports
   * the new limit from its next heartbeat (divisions are fractions of the limit, so the fleet's shares hold
   * while its nodes switch), the reserve is drawn under the new generation (what this node held of the old
   * one goes back to it).
   */
  #switch(entry: LiveRule, version: number): void {
    const { clock, memory } = this.#ctx;
    const before = { rule: this.#rule, shared: this.#shared, bound: this.#bound };
    const rule = hybridRule('dividedStore', entry.rule);
    const apart = `g${version}`;
    this.#rule = rule;
    this.#state = entry.state;
    this.#shared = sharedRule(rule, this);
    const next = memory.bind({ rules: [this.#shared], prefix: this.#prefix, apart });
    if (hasStateAccess(next) && hasStateAccess(before.bound)) {
      const source = {
        // A joiner meets a key it never held as spent: spent under the rule before the change, so a raised limit
        // leaves this node its share of the extra (carried as used), as exact and leased mode grant the extra.
        bound: this.#freshSpent === true ? spentWhereMissing(before.bound, before.shared, clock) : before.bound,
        rules: [before.shared],
        until: clock.now() + carryWindowMs([before.rule]),
        release: () => void before.bound.unbind?.(),
      };
      this.#bound = new CarriedBinding(next, [this.#shared], source, entry.from[0]?.mode ?? 'fresh', clock);
    } else {
      void before.bound.unbind?.();
      this.#bound = next;
    }
    if (before.rule.name !== rule.name) {
      // Another rule, another fleet: this node leaves the old one (its share goes back to its nodes) and joins
      // the new one as the fleet it knew.
      void this.#leave();
      this.#seenCurrent = undefined;
      this.#leave = this.#join(rule.name);
    } else {
      this.#ctx.membership.beatSoon();
    }
    const reserve = this.#reserve;
    if (reserve !== undefined) {
      void reserve.close();
      this.#reserve = this.#makeReserve(entry, reserve.fraction);
    }
    this.#away?.unbind();
    this.#away = this.#bindAway(rule, apart);
  }

  /** This node's fraction of the fleet's limit (the FleetShare its rule is held at). */
  get fraction(): number {
    return this.#fraction;
  }

  /** A key met for the first time starts spent unless this node founded its fleet (see #onSummary). */
  get freshKeysSpent(): boolean {
    return this.#freshSpent === true;
  }

  /** True while Redis is unreachable: this node keeps its last share (and its part of the reserve), blind to the fleet. */
  get degraded(): boolean {
    return this.#failing;
  }

  /** Heartbeats fail, or the reserve's Redis does not answer. */
  get #failing(): boolean {
    return this.#beatFailing || this.#reserveHealth?.healthy === false;
  }

  /** This node's fraction of the fleet's limit (`sluice.divided.share`). */
  get share(): number {
    return this.#fraction;
  }

  /**
   * A heartbeat or a draw failed (its flag already set): reported once, when this node goes from reaching
   * Redis to not, until both answer again.
   */
  #failed(error: Error): void {
    this.#heardFirst();
    if (this.#awayFrom !== undefined) return;
    this.#awayFrom = error;
    const away = this.#allocated === undefined ? 0 : awayFraction(this.#allocated, this.#fraction, this.#rule.burst);
    this.#awayHolds = away > 0;
    if (away > 0) this.#awayShare = away;
    emitSafely(this.#ctx.events, 'store-error', error);
  }

  #heardFirst(): void {
    this.#heard = undefined;
    this.#hear();
  }

  /** A heartbeat or the reserve's probe answered (its flag already cleared): recovered once both do. */
  #recovered(): void {
    if (this.#awayFrom === undefined || this.#failing) return;
    this.#awayFrom = undefined;
    this.#awayHolds = false;
    emitSafely(this.#ctx.events, 'store-recovered');
    void this.#chargeAway();
    // Redis may have come back empty (a restart without persistence) with the heartbeat that found its slot's
    // version gone unanswered: a changed configuration is read again, and stored again if it was lost.
    if (this.#config.version > 1) this.heard();
  }

  /**
   * What this node granted of its part of the reserve while Redis was away, charged to the reserve in Redis
   * (past its limit: the fleet pays it back), so an outage's grants count against the limit after it too; what
   * Redis cannot take now is kept for the next recovery.
   */
  async #chargeAway(): Promise<void> {
    const away = this.#away;
    const reserve = this.#reserve;
    if (away === undefined || reserve === undefined) return;
    const charges = away.takeCharges();
    let permits = 0;
    let kept = 0;
    await Promise.all(
      charges.map(async ([key, owed]) => {
        try {
          // One rule: its count is the charge's.
          await reserve.penalize(key, mostPermits(owed), true);
          permits += mostPermits(owed);
        } catch {
          kept += mostPermits(owed);
          away.keepCharge(key, owed);
        }
      }),
    );
    const event: FallbackChargedEvent = { prefix: this.#prefix, keys: charges.length, permits, kept };
    emitSafely(this.#ctx.events, 'fallback-charged', event);
  }

  /** A heartbeat's answer: the share this node's reported demand gets in its fleet's division (less the reserve). */
  #onSummary(summary: FleetSummary): void {
    // The fleet's slot is at a newer configuration (a missed message): read it. One older than this node's had
    // lost its version (Redis lost its keys): read it too, so a lost configuration is stored again with what
    // this node knows.
    if (summary.version > this.#config.version) this.heard(summary.version);
    else if (summary.version < this.#config.version) this.heard();
    this.#beatFailing = false;
    this.#recovered();
    this.#heardFirst();
    const { heartbeatMs } = this.#ctx.o;
    if ((summary.nodes * 1_000) / heartbeatMs > MAX_FLEET_HEARTBEATS_PER_SECOND)
      warnOnce(
        'SLUICE_FLEET_HEARTBEATS',
        `divided limiter ${JSON.stringify(this.#prefix)}: ${summary.nodes} nodes heartbeating every ${heartbeatMs} ms ` +
          `(heartbeatMs) ask Redis ${Math.round((summary.nodes * 1_000) / heartbeatMs)} times a second; a fleet this ` +
          `size needs heartbeatMs >= ${Math.ceil((summary.nodes * 1_000) / MAX_FLEET_HEARTBEATS_PER_SECOND)}.`,
      );
    this.#freshSpent ??= !summary.founded;
    const reserve = this.#reserve;
    if (reserve !== undefined && summary.reserve !== undefined) reserve.fraction = summary.reserve;
    let allocated = allocatedFraction(summary, reserve === undefined);
    // This node's history in the fleet broke (Redis lost the fleet's keys, or this node missed a division or
    // was taken for dead): its previous allocation there is not the one it heard, so it holds no more than it
    // did until a whole division cycle has passed (a founder after a restart must not take the whole limit
    // while the others still hold theirs).
    const seen = this.#seenCurrent;
    if (
      allocated !== undefined &&
      seen !== undefined &&
      summary.current !== seen &&
      summary.previous !== seen &&
      this.#allocated !== undefined
    )
      allocated = Math.min(allocated, this.#allocated);
    if (summary.current !== undefined) this.#seenCurrent = summary.current;
    if (allocated !== undefined) this.#allocated = allocated;
    // Without a reserve a share under one permit is held anyway (rounded up to one by the rule): nothing else
    // would serve the node.
    const fraction =
      allocated === undefined
        ? this.#fraction
        : reserve === undefined
          ? allocated
          : localFraction(allocated, this.#rule.burst, this.#divided);
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

  /**
   * This node's share decides; a request it refuses draws on the reserve (a Redis call per batch, awaited),
   * and only then waits for its share, if the caller lets it wait.
   */
  consume(key: string, asked: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    // One rule: a call's per-rule costs name it or count 0.
    const permits = permitsOfRule(asked, this.#rule);
    // A new node's first decisions wait (within timeoutMs) for its first heartbeat's answer, which in a new
    // fleet is the whole share at once, rather than draw on the reserve.
    if (this.#heard !== undefined)
      return withDeadline(this.#heard, this.#ctx.o.timeoutMs, 'the first heartbeat').then(
        () => this.#versioned(this.#decide(key, permits, maxWaitMs, note)),
        () => this.#versioned(this.#decide(key, permits, maxWaitMs, note)),
      );
    return this.#versioned(this.#decide(key, permits, maxWaitMs, note));
  }

  /** A decision marked with the configuration version it was made under, once the limiter's rules changed. */
  #versioned(decision: Decision | Promise<Decision>): Decision | Promise<Decision> {
    const version = this.#config.version;
    if (version === 1) return decision;
    return decision instanceof Promise
      ? decision.then((d) => ({ ...d, configVersion: version }))
      : { ...decision, configVersion: version };
  }

  #decide(
    key: string,
    permits: number,
    maxWaitMs: number,
    note: DecisionNote | undefined,
  ): Decision | Promise<Decision> {
    this.#meter.add(permits, this.#ctx.clock.now());
    const reserve = this.#reserve;
    if (reserve === undefined) return this.#bound.consume(key, permits, maxWaitMs) as Decision;
    const local =
      this.#fraction > 0 ? (this.#bound.consume(key, permits, 0) as Decision) : this.#holdsNone(key, permits);
    if (local.allowed) return local;
    if (this.#awayHolds && this.#away !== undefined && this.#failing) {
      const away = this.#away.decide(key, permits, 0, false);
      if (away.allowed) return this.#pastShare(local, note, 'fallback');
    }
    const drawn = reserve.draw(key, permits);
    if (drawn === true) return this.#pastShare(local, note, 'lease');
    if (drawn === false) return this.#pastReserve(key, permits, maxWaitMs, local);
    return drawn.then((granted) =>
      granted ? this.#pastShare(local, note, 'lease') : this.#pastReserve(key, permits, maxWaitMs, local),
    );
  }

  /**
   * A grant past this node's share: drawn from the reserve ('lease'), or from its part of the reserve held
   * here while Redis is away ('fallback'): the local denial's figures, allowed (its `remaining` is the share's).
   */
  #pastShare(local: Decision, note: DecisionNote | undefined, source: 'lease' | 'fallback'): Decision {
    if (note !== undefined) note.source = source;
    const granted: Decision = { ...local, allowed: true, retryAfterMs: 0, waitMs: 0 };
    // The limiter hands a refund of a fail mode's grant back with grant 'fallback'.
    return source === 'fallback' ? { ...granted, source } : granted;
  }

  /** Neither the share nor the reserve had it: the share decides whether the caller may wait. */
  #pastReserve(key: string, permits: number, maxWaitMs: number, local: Decision): Decision {
    if (this.#fraction === 0) return this.#holdsNone(key, permits); // the draw just said when the reserve frees
    return maxWaitMs > 0 ? (this.#bound.consume(key, permits, maxWaitMs) as Decision) : local;
  }

  /**
   * The local answer while this node holds none of the divided part (a newcomer, until two divisions have
   * allocated it): a denial until its next heartbeat, which the reserve may overturn. No rule is held at
   * nothing; the key's state is left untouched.
   */
  #holdsNone(key: string, permits = 1): Decision {
    const rule = this.#rule;
    const now = this.#ctx.clock.now();
    // Its answer says when this node can next grant the key (not its next heartbeat on every denial, while a
    // window stays spent): when the reserve frees it (its last draw said), or when a share may come. A share
    // may come at the next heartbeat only while no division has allocated this node anything (one that has
    // holds under one permit of it); the key then frees at once, or, met spent, when a spent state frees.
    const heartbeat = this.#ctx.o.heartbeatMs;
    const reserveFrees = this.#reserve?.freesIn(key, now) ?? heartbeat;
    const shareFrees =
      this.#allocated !== undefined
        ? Number.POSITIVE_INFINITY
        : this.#freshSpent === true
          ? Math.max(heartbeat, untilSpentFrees(rule, permits, now))
          : heartbeat;
    const wait = Math.max(1, Math.min(reserveFrees, shareFrees));
    return {
      allowed: false,
      limit: rule.limit,
      remaining: 0,
      retryAfterMs: wait,
      resetAfterMs: wait,
      waitMs: 0,
      rule: rule.name,
    };
  }

  peek(key: string): Decision | Promise<Decision> {
    return this.#versioned(this.#fraction > 0 ? (this.#bound.peek(key) as Decision) : this.#holdsNone(key));
  }

  reset(key: string): void {
    this.#reserve?.forget(key);
    this.#away?.reset(key);
    void this.#bound.reset(key);
  }

  /**
   * Gives back what this node granted on the key: to what it drew from the reserve first (at most what it
   * spent of it), the rest to its share of the key (its own state, under its current share).
   */
  refund(key: string, asked: Permits, grantedAgoMs: number, grant?: GrantSource): void {
    const permits = permitsOfRule(asked, this.#rule);
    // A grant of the reserve's part held here while Redis was away: back to it, never to the share. What was
    // charged to the reserve already stays charged (a refund never gives the fleet more than it had).
    if (grant === 'fallback' && this.#away !== undefined) {
      this.#away.refund(key, permits, grantedAgoMs);
      return;
    }
    const rest = permits - (this.#reserve?.refund(key, permits, grantedAgoMs) ?? 0);
    if (rest > 0 && this.#fraction > 0) void this.#bound.refund?.(key, rest, grantedAgoMs);
  }

  /**
   * Takes from this node's draw on the key's reserve, then from its share of the key, past it if need be: this
   * node denies the key until it drains. A node that holds none of the divided part takes the rest from the
   * reserve in Redis (past its limit, so every node pays).
   */
  async penalize(key: string, asked: Permits): Promise<void> {
    const permits = permitsOfRule(asked, this.#rule);
    const holds = this.#fraction > 0;
    const rest = this.#reserve === undefined ? permits : await this.#reserve.penalize(key, permits, !holds);
    if (rest > 0 && holds) await this.#bound.penalize?.(key, rest);
  }

  /** The limiter closed: it leaves its membership (one last call), so the others take up its share. */
  async unbind(): Promise<void> {
    if (this.#closed) return;
    this.release();
    await Promise.all([this.#leave(), this.#reserve?.close()]);
  }

  /** Lets go of what the store holds for this limiter (the store's close leaves every membership at once). */
  release(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unlist();
    this.#forget();
    this.#reserveHealth?.close();
    void this.#bound.unbind?.();
    this.#away?.unbind();
  }

  /** Hands back what this node holds of the reserve (the store's close waits for it). */
  closeReserve(): Promise<void> {
    return this.#reserve?.close() ?? Promise.resolve();
  }
}

/**
 * Divided mode as a store: each node enforces its share of the limit locally with the core algorithm; the
 * share comes from heartbeats in Redis. No Redis call on the decision path; approximate (a membership change
 * takes up to 2 heartbeats to reach every node). When Redis is unreachable a node keeps its last share and
 * holds its part of the reserve, charged to the reserve when Redis answers again. One
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

/** Why a divided limiter refuses overrides. */
function noOverrides(): SluiceError {
  return new SluiceError(
    'UNSUPPORTED',
    'dividedStore keeps no overrides: an override is read with its key on Redis, and divided mode decides with ' +
      'no Redis call; give such keys a limiter of their own, or use leasedStore or redisStore',
  );
}
