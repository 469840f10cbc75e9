import type { Algorithm, CarryMode, Decision, LimiterConfiguration, Permits } from '@sluice/core';
import {
  type BoundStore,
  type GrantSource,
  type SharedRules,
  CarriedBinding,
  type DecisionNote,
  type FleetShare,
  carryWindowMs,
  emitSafely,
  hasStateAccess,
  permitsOfRule,
  registerStatus,
  sharedRule,
  EngineHealth,
  withDeadline,
  type LiveRule,
} from '@sluice/core/internal';
import type { HeartbeatAnswer } from '@sluice/core/engine';
import { DemandMeter } from './demand-meter.js';
import { DividedConfig } from './divided-config.js';
import { DividedOverrides } from './divided-overrides.js';
import type { DivideContext } from './divided-context.js';
import { warnOfHeartbeatRate } from './membership.js';
import { NodeShare } from './node-share.js';
import { Outage } from './outage.js';
import type { Reserve } from './reserve.js';
import { generationReserve } from './reserve-generation.js';
import { hybridRule } from './supported-rule.js';
import { spentWhereMissing, untilSpentFrees } from './unseen-keys.js';

/**
 * One limiter on a divided store: its rule held at this node's share, the share from its membership. Its
 * rule is the limiter's configuration's (live limits, kept in Redis for every node of its prefix): each
 * heartbeat reads its slot's configuration version, so a change made on another node reaches this one within
 * a heartbeat (no subscriber connection per node: a fleet of hundreds would hold one each), and switches the rule in place (the local
 * states carried by the change's carry mode, the membership reporting the new limit, the reserve drawn under
 * the new generation), with no leave and rejoin of the fleet unless the rule's name changed.
 */
export class DividedBinding implements BoundStore, FleetShare, SharedRules {
  readonly #ctx: DivideContext;
  /** The rule in force, and the rule held at this node's share of it. */
  #rule: Algorithm;
  #shared: Algorithm;
  readonly #prefix: string;
  #bound: BoundStore;
  readonly #meter: DemandMeter;
  /** This node's share of the fleet's limit, as its heartbeats' answers allocate it. */
  readonly #share: NodeShare;
  /** The part of the limit kept in Redis for requests past this node's share (undefined: reserve 0). */
  #reserve: Reserve | undefined;
  /** This node's time away from Redis, and the part of the reserve it holds meanwhile. */
  readonly #outage: Outage;
  #leave: () => Promise<void>;
  readonly #forget: () => void;
  /** Heartbeats fail (the fleet's slot, or the connection); cleared by one answered. */
  #beatFailing = false;
  /**
   * With a reserve: whether the reserve's Redis answers (its slot may be down while the fleet's is not, in a
   * failover): failed by a draw, healthy again when its probe is answered (EngineHealth, as exact mode's).
   */
  readonly #reserveHealth: EngineHealth | undefined;
  #closed = false;
  /** Settles at the first heartbeat's answer (or failure): a new node's first decisions wait for it. */
  #heard: Promise<void> | undefined;
  #hear: () => void = () => {};
  readonly source = 'share';
  /** Takes this binding off the list metrics read (its share and whether heartbeats fail). */
  readonly #unlist: () => void;
  /** The limiter's configuration as kept in Redis, and as this node decides under it. */
  readonly #live: DividedConfig;
  /** Keys with rules of their own, decided exactly on the engine. */
  readonly #overrides: DividedOverrides;
  /** An override's decision found the engine away; cleared when it answers again. */
  #overrideFailing = false;

  constructor(ctx: DivideContext, rule: Algorithm, prefix: string, forget: () => void) {
    this.#ctx = ctx;
    this.#rule = rule;
    this.#prefix = prefix;
    this.#forget = forget;
    this.#live = new DividedConfig(
      ctx,
      prefix,
      rule,
      (entry, version) => this.#switch(entry, version),
      (config) => this.#overrides.adopted(config),
    );
    this.#overrides = new DividedOverrides(ctx, {
      prefix,
      version: () => this.#live.version,
      share: this,
      refresh: (version) => this.refresh(version),
      limiter: this,
      failed: (error) => {
        this.#overrideFailing = true;
        this.#failed(error);
      },
      recovered: () => {
        this.#overrideFailing = false;
        this.#recovered();
      },
    });
    const { o, clock } = ctx;
    this.#share = new NodeShare(o.reserve, o.assumedNodes);
    if (o.reserve > 0) this.#heard = new Promise((resolve) => (this.#hear = resolve));
    this.#reserveHealth =
      o.reserve > 0
        ? new EngineHealth({
            ...ctx.host.health,
            timeoutMs: o.timeoutMs,
            onChange: (healthy, error) => {
              if (!healthy) return this.#failed(error ?? new Error('the reserve did not answer'));
              this.#reserve?.resume();
              this.#recovered();
            },
          })
        : undefined;
    this.#reserve = o.reserve > 0 ? this.#makeReserve(this.#live.inForce, o.reserve) : undefined;
    this.#shared = sharedRule(rule, this);
    this.#bound = ctx.memory.bind({ rules: [this.#shared], prefix });
    this.#outage = new Outage(o.reserve > 0 ? ctx.away : undefined, prefix, rule);
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
      divided: this.#share.divided,
      demand: () => this.#meter.perSecond(clock.now()),
      knownNodes: () => this.#share.nodes,
      assumedNodes: o.assumedNodes,
      version: () => this.#live.version,
      answered: (summary) => this.#onSummary(summary),
      failed: (error) => {
        this.#beatFailing = true;
        this.#failed(error);
      },
    });
  }

  /** The reserve of `entry`'s generation, at `fraction` of the limit (see generationReserve). */
  #makeReserve(entry: LiveRule, fraction: number): Reserve {
    return generationReserve(
      this.#ctx,
      {
        prefix: this.#prefix,
        version: () => this.#live.version,
        refresh: () => this.refresh(),
        heard: () => this.heard(),
        health: this.#reserveHealth,
      },
      entry,
      fraction,
    );
  }

  get configuration(): LimiterConfiguration {
    return this.#live.configuration;
  }

  /** Reads the stored configuration and decides under it (see DividedConfig.refresh). */
  refresh(seen = 1): Promise<void> {
    return this.#live.refresh(seen);
  }

  /** The fleet's slot is at a newer configuration: read it (a failure keeps the last one known, and says so). */
  heard(seen = 1): void {
    this.#live.heard(seen);
  }

  /** Stores `rules` for every node (see StoredConfiguration.change); each switches within a heartbeat, this one at once. */
  reconfigure(rules: readonly Algorithm[], carry: CarryMode): Promise<LimiterConfiguration> {
    return this.#live.reconfigure(rules, carry);
  }

  /** Gives `key` rules of its own for every node, decided exactly on the engine (see DividedOverrides). */
  override(key: string, rules: readonly Algorithm[]): Promise<void> {
    return this.#live.override(key, rules);
  }

  removeOverride(key: string): Promise<void> {
    return this.#live.removeOverride(key);
  }

  overrides(): Promise<ReadonlyArray<{ readonly key: string; readonly rules: readonly Algorithm[] }>> {
    return this.#live.overrides();
  }

  /** The binding of `key`'s override, or undefined for a key divided as usual. */
  #own(key: string): BoundStore | undefined {
    const config = this.#live.config;
    return config.overrides.size === 0 ? undefined : this.#overrides.of(key, config);
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
    this.#shared = sharedRule(rule, this);
    const next = memory.bind({ rules: [this.#shared], prefix: this.#prefix, apart });
    if (hasStateAccess(next) && hasStateAccess(before.bound)) {
      const source = {
        // A joiner meets a key it never held as spent: spent under the rule before the change, so a raised limit
        // leaves this node its share of the extra (carried as used), as exact and leased mode grant the extra.
        bound: this.#share.freshKeysSpent ? spentWhereMissing(before.bound, before.shared, clock) : before.bound,
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
      this.#share.rejoined();
      this.#leave = this.#join(rule.name);
    } else {
      this.#ctx.membership.beatSoon();
    }
    const reserve = this.#reserve;
    if (reserve !== undefined) {
      void reserve.close();
      this.#reserve = this.#makeReserve(entry, reserve.fraction);
    }
    this.#outage.rebind(rule, apart);
  }

  /** This node's fraction of the fleet's limit (the FleetShare its rule is held at). */
  get fraction(): number {
    return this.#share.fraction;
  }

  /** A key met for the first time starts spent unless this node founded its fleet (see NodeShare.hear). */
  get freshKeysSpent(): boolean {
    return this.#share.freshKeysSpent;
  }

  /** True while Redis is unreachable: this node keeps its last share (and its part of the reserve), blind to the fleet. */
  get degraded(): boolean {
    return this.#failing;
  }

  /** Heartbeats fail, or the reserve's or an override's engine does not answer. */
  get #failing(): boolean {
    return this.#beatFailing || this.#reserveHealth?.healthy === false || this.#overrideFailing;
  }

  /** This node's fraction of the fleet's limit (`sluice.divided.share`). */
  get share(): number {
    return this.#share.fraction;
  }

  /**
   * A heartbeat or a draw failed (its flag already set): reported once, when this node goes from reaching
   * Redis to not, until both answer again.
   */
  #failed(error: Error): void {
    this.#heardFirst();
    if (this.#outage.begin(error, this.#share.awayFraction(this.#rule.burst)))
      emitSafely(this.#ctx.events, 'store-error', error);
  }

  #heardFirst(): void {
    this.#heard = undefined;
    this.#hear();
  }

  /** A heartbeat or the reserve's probe answered (its flag already cleared): recovered once both do. */
  #recovered(): void {
    if (this.#failing || !this.#outage.end()) return;
    emitSafely(this.#ctx.events, 'store-recovered');
    void this.#chargeAway();
    void this.#overrides.settle((charged) =>
      emitSafely(this.#ctx.events, 'fallback-charged', { prefix: this.#prefix, ...charged }),
    );
    // Redis may have come back empty (a restart without persistence) with the heartbeat that found its slot's
    // version gone unanswered: a changed configuration is read again, and stored again if it was lost.
    if (this.#live.version > 1) this.heard();
  }

  /** What this node granted of its part of the reserve while Redis was away, charged to the reserve (see Outage.charge). */
  async #chargeAway(): Promise<void> {
    const reserve = this.#reserve;
    if (reserve === undefined) return;
    const charged = await this.#outage.charge(reserve);
    if (charged !== undefined) emitSafely(this.#ctx.events, 'fallback-charged', { prefix: this.#prefix, ...charged });
  }

  /** A heartbeat's answer: the share this node's reported demand gets in its fleet's division (see NodeShare.hear). */
  #onSummary(summary: HeartbeatAnswer): void {
    // The fleet's slot is at a newer configuration (a missed message): read it. One older than this node's had
    // lost its version (Redis lost its keys): read it too, so a lost configuration is stored again with what
    // this node knows.
    if (summary.version > this.#live.version) this.heard(summary.version);
    else if (summary.version < this.#live.version) this.heard();
    this.#beatFailing = false;
    this.#recovered();
    this.#heardFirst();
    warnOfHeartbeatRate(this.#prefix, summary.nodes, this.#ctx.o.heartbeatMs);
    const reserve = this.#reserve;
    if (reserve !== undefined && summary.reserve !== undefined) reserve.fraction = summary.reserve;
    if (!this.#share.hear(summary, this.#rule.burst)) return;
    emitSafely(this.#ctx.events, 'membership', {
      prefix: this.#prefix,
      rule: this.#rule.name,
      nodes: summary.nodes,
      share: this.#share.fraction,
    });
  }
  /**
   * This node's share decides; a request it refuses draws on the reserve (a Redis call per batch, awaited),
   * and only then waits for its share, if the caller lets it wait.
   */
  consume(key: string, asked: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    const own = this.#own(key);
    if (own !== undefined) return own.consume(key, asked, maxWaitMs, note);
    // One rule: a call's per-rule permits name it or count 0.
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
    const version = this.#live.version;
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
      this.#share.fraction > 0 ? (this.#bound.consume(key, permits, 0) as Decision) : this.#holdsNone(key, permits);
    if (local.allowed) return local;
    if (this.#failing && this.#outage.grants(key, permits)) return this.#pastShare(local, note, 'fallback');
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
    if (this.#share.fraction === 0) return this.#holdsNone(key, permits); // the draw just said when the reserve frees
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
      this.#share.allocated !== undefined
        ? Number.POSITIVE_INFINITY
        : this.#share.freshKeysSpent
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
    const own = this.#own(key);
    if (own !== undefined) return own.peek(key);
    return this.#versioned(this.#share.fraction > 0 ? (this.#bound.peek(key) as Decision) : this.#holdsNone(key));
  }

  reset(key: string): void | Promise<void> {
    const own = this.#own(key);
    if (own !== undefined) return own.reset(key);
    this.#reserve?.forget(key);
    this.#outage.reset(key);
    void this.#bound.reset(key);
  }

  /**
   * Gives back what this node granted on the key: to what it drew from the reserve first (at most what it
   * spent of it), the rest to its share of the key (its own state, under its current share).
   */
  refund(key: string, asked: Permits, grantedMsAgo: number, grant?: GrantSource): void | Promise<void> {
    const own = this.#own(key);
    if (own !== undefined) return own.refund?.(key, asked, grantedMsAgo, grant);
    const permits = permitsOfRule(asked, this.#rule);
    // A grant of the reserve's part held here while Redis was away: back to it, never to the share. What was
    // charged to the reserve already stays charged (a refund never gives the fleet more than it had).
    if (grant === 'fallback' && this.#outage.refund(key, permits, grantedMsAgo)) return;
    const rest = permits - (this.#reserve?.refund(key, permits, grantedMsAgo) ?? 0);
    if (rest > 0 && this.#share.fraction > 0) void this.#bound.refund?.(key, rest, grantedMsAgo);
  }

  /**
   * Takes from this node's draw on the key's reserve, then from its share of the key, past it if need be: this
   * node denies the key until it drains. A node that holds none of the divided part takes the rest from the
   * reserve in Redis (past its limit, so every node pays).
   */
  async penalize(key: string, asked: Permits): Promise<void> {
    const own = this.#own(key);
    if (own !== undefined) return own.penalize?.(key, asked);
    const permits = permitsOfRule(asked, this.#rule);
    const holds = this.#share.fraction > 0;
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
    this.#live.close();
    this.#unlist();
    this.#forget();
    this.#reserveHealth?.close();
    this.#overrides.close();
    void this.#bound.unbind?.();
    this.#outage.unbind();
  }

  /** Hands back what this node holds of the reserve (the store's close waits for it). */
  closeReserve(): Promise<void> {
    return this.#reserve?.close() ?? Promise.resolve();
  }
}

/** The weight of the latest interval in a divided node's reported demand (see DemandMeter). */
const DEMAND_WEIGHT = 0.125;
