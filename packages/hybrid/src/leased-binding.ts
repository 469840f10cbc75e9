import type { Algorithm, Clock, Decision, Permits } from '@sluice/core';
import {
  type BoundStore,
  type GrantSource,
  type DecisionNote,
  emitSafely,
  keyCache,
  permitsOfRule,
  reportLease,
  staleVersionOf,
  DENY_CACHE_TRUST_MS,
  DeadlineError,
  type FallbackBinding,
  type EngineHealth,
  withDeadline,
  type ExactBinding,
} from '@sluice/core/internal';
import type { LRUCache } from 'lru-cache';
import { CentralLeases } from './central-leases.js';
import { ColdDemand } from './cold-demand.js';
import { DemandMeter } from './demand-meter.js';
import { type HeldLease, creditLease, emptyLease, spendFromLease } from './key-lease.js';
import { type LeaseShape, leaseShape } from './lease-client.js';
import type { LeaseContext, LeaseLive, LeaseSettings } from './leased-context.js';
import { LeaseControls } from './leased-controls.js';

/**
 * One limiter on a leased store, under one set of its rules (see LiveBinding): each key's permits spent from
 * a batch this node leased of the key's central state, a key too cold for a lease decided exactly there, and
 * failMode past the leases while Redis is away.
 */
export class LeasedBinding implements BoundStore {
  readonly #ctx: LeaseContext;
  readonly #o: LeaseSettings;
  readonly #clock: Clock;
  readonly #rule: Algorithm;
  readonly #prefix: string;
  readonly #shape: LeaseShape;
  /** The key's central state on Redis, and its lessees. */
  readonly #central: CentralLeases;
  readonly #burst: number;
  readonly #leases: LRUCache<string, KeyLease>;
  /** Demand of the keys that hold no lease record (they are decided exactly until a lease pays). */
  readonly #cold: ColdDemand;
  readonly #health: EngineHealth;
  /** Exact mode on the lease's central state, for keys too cold for a lease (see LEASE_PAYS_AT). */
  readonly #exact: ExactBinding;
  /** What decides past this node's lease while Redis is away (the same one decides the exact keys). */
  readonly #fallback: FallbackBinding;
  /** Reset, refund and penalize: on this node's lease first, then on the central state. */
  readonly #controls: LeaseControls;
  readonly #unbind: () => void;
  readonly #live: LeaseLive;
  #closed = false;
  /** A decision spends a lease unless the fail mode makes it (the note says so). */
  readonly source = 'lease';

  constructor(
    ctx: LeaseContext,
    rule: Algorithm,
    prefix: string,
    exact: ExactBinding,
    fallback: FallbackBinding,
    live: LeaseLive,
    unbind: () => void,
  ) {
    this.#live = live;
    this.#ctx = ctx;
    this.#o = ctx.o;
    this.#clock = ctx.clock;
    this.#rule = rule;
    this.#prefix = prefix;
    this.#health = ctx.health;
    this.#exact = exact;
    this.#fallback = fallback;
    this.#unbind = unbind;
    const o = ctx.o;
    this.#shape = leaseShape(rule);
    this.#central = new CentralLeases(ctx, {
      prefix,
      liveMs: o.liveMs,
      stateName: live.centralName,
      version: () => live.version(),
      hoardingDivisor: o.maxLease === undefined ? HOARDING_DIVISOR : undefined,
    });
    this.#burst = rule.burst;
    this.#cold = new ColdDemand(this.#meterIntervalMs(), o.maxKeys, this.#clock.now());
    // A lease pushed out of the cache still holds debited permits: give them back.
    this.#leases = keyCache<string, KeyLease>(o.maxKeys, (lease, key, reason) => {
      if (reason === 'evict' && lease.available >= 1) void this.#giveBack(key, lease).catch(() => {});
    });
    this.#controls = new LeaseControls({
      engine: ctx.engine,
      prefix,
      shape: this.#shape,
      central: this.#central,
      leases: this.#leases,
      cold: this.#cold,
      exact,
      fallback,
      health: ctx.health,
      clock: ctx.clock,
      timeoutMs: o.timeoutMs,
    });
  }

  /**
   * The batch to ask for: about targetMs of this key's recent demand. The script caps it at
   * burst / (4 x live lessees) from the membership it sees in the same call, unless maxLease is set.
   */
  #batch(lease: KeyLease, now: number): number {
    const wanted = Math.ceil((lease.meter.perSecond(now) * this.#o.targetMs) / 1000);
    return Math.min(Math.max(wanted, 1), this.#o.maxLease ?? this.#burst, this.#burst);
  }

  /** The interval a key's demand is measured over. */
  #meterIntervalMs(): number {
    return Math.max(this.#o.targetMs, 10);
  }

  consume(key: string, asked: Permits, _maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    // One rule: a call's per-rule permits name it or count 0.
    const permits = permitsOfRule(asked, this.#rule);
    const now = this.#clock.now();
    let lease = this.#leases.get(key);
    if (lease === undefined) {
      // A key with no lease record is decided exactly while its demand would not fill a batch (see
      // LEASE_PAYS_AT); what an exact decision needs of the checks below, it does itself.
      const demand = this.#cold.add(key, permits, now);
      if (demand < LEASE_PAYS_AT && permits <= this.#burst && this.#health.healthy)
        return this.#exact.consume(key, permits, 0, note);
      this.#cold.delete(key);
      lease = { ...emptyLease(), meter: new DemandMeter(this.#meterIntervalMs(), now), answeredAt: now };
      // The record starts from the demand seen so far (this request's included).
      lease.meter.add(demand - permits, now);
      this.#leases.set(key, lease);
    }
    lease.meter.add(permits, now);
    if (spendFromLease(lease, permits, now)) {
      this.#prefetch(key, lease, now);
      return this.#granted(lease, now);
    }
    if (permits > this.#burst) return this.#denied(lease, Number.POSITIVE_INFINITY);
    // While Redis fails the store probes by itself: a decision never waits on it.
    if (!this.#health.healthy) return this.#fallbackDecision(key, permits, note);
    // A spent central state is answered here until it can change, or for DENY_CACHE_TRUST_MS at most: a node that
    // missed another's reset or refund (its subscriber reconnecting) asks again within seconds.
    if (lease.pending === undefined && now < lease.emptyUntil && now < lease.answeredAt + DENY_CACHE_TRUST_MS)
      return this.#denied(lease, lease.emptyUntil - now);
    if (lease.pending === undefined && lease.meter.expected(this.#o.targetMs, now) < LEASE_PAYS_AT)
      return this.#exact.consume(key, permits, 0, note);
    return this.#leaseThenDecide(key, lease, permits, note);
  }

  async #leaseThenDecide(
    key: string,
    lease: KeyLease,
    permits: number,
    note: DecisionNote | undefined,
  ): Promise<Decision> {
    if (lease.pending === undefined)
      this.#startLease(key, lease, Math.max(this.#batch(lease, this.#clock.now()), permits));
    try {
      // The lease goes on past the deadline: a late answer is still credited by #startLease.
      await withDeadline(lease.pending as Promise<void>, this.#o.timeoutMs, 'a lease');
    } catch (error) {
      const newer = staleVersionOf(error);
      if (newer !== undefined) {
        // The limiter's configuration changed: decided again under it (this binding's leases go back).
        const next = await this.#live.onStale(newer);
        if (next !== undefined && next !== this) return next.consume(key, permits, 0, note);
        return this.#fallbackDecision(key, permits, note);
      }
      // A failed call was reported where it failed; a missed deadline is reported here.
      if (error instanceof DeadlineError) this.#health.reportFailure(error, this.#central.stateKey(key));
      return this.#fallbackDecision(key, permits, note);
    }
    const now = this.#clock.now();
    if (spendFromLease(lease, permits, now)) return this.#granted(lease, now);
    // Concurrent callers took what came, or Redis had too little: retry when it said more would be there.
    return this.#denied(lease, Math.max(lease.emptyUntil - now, 1));
  }

  #startLease(key: string, lease: KeyLease, want: number, prefetch = false): void {
    const sentAt = this.#clock.now();
    const ask = Math.min(Math.max(want - lease.available, 1), this.#burst);
    const call = this.#central
      .lease(key, this.#shape, lease, ask, sentAt)
      .then((reply) => {
        lease.answeredAt = this.#clock.now();
        creditLease(lease, reply, ask, this.#shape, sentAt, lease.answeredAt);
        this.#health.reportSuccess();
        emitSafely(this.#ctx.events, 'lease', {
          key,
          want: ask,
          granted: reply.granted,
          held: Math.floor(lease.available),
          liveNodes: Math.max(1, reply.liveNodes),
          prefetch,
        });
        if (reply.granted > 0) reportLease(this.#prefix, reply.granted);
        if (this.#closed && lease.available >= 1) return this.#giveBack(key, lease).then(() => {});
        return undefined;
      })
      .finally(() => {
        lease.pending = undefined;
      });
    // A failed lease is reported once, here; callers waiting on it decide by failMode. A stale one is no
    // failure: the configuration changed, and this node learns it now (a prefetch has no caller to do it).
    call.catch((error: unknown) => {
      const newer = staleVersionOf(error);
      if (newer === undefined) this.#health.reportFailure(error, this.#central.stateKey(key));
      else if (prefetch) void this.#live.onStale(newer);
    });
    lease.pending = call;
  }

  /** At the low-water mark, the next batch is asked for before callers run out, so they never wait on Redis. */
  #prefetch(key: string, lease: KeyLease, now: number): void {
    if (lease.pending !== undefined || !this.#health.healthy || this.#closed || now < lease.emptyUntil) return;
    const batch = this.#batch(lease, now);
    if (lease.available >= batch * this.#o.lowWater) return;
    this.#startLease(key, lease, batch, true);
  }

  /** The fail mode's decision (marked `source: 'fallback'`): past this node's lease while Redis is away. */
  #fallbackDecision(key: string, permits: number, note: DecisionNote | undefined): Decision {
    if (note !== undefined) note.source = 'fallback';
    return this.#fallback.decide(key, permits, 0, false);
  }

  /**
   * A leased decision's `remaining`, for the client's headers: what this node holds plus what the central state
   * had left at this node's latest lease, at most the limit. The client's allowance across the fleet, as well as
   * this node knows it (others' spending since its lease is not seen); never only this node's batch, which
   * would tell a client with 200 left that it has 31.
   */
  #remaining(lease: KeyLease, now: number): number {
    const held = now < lease.expiresAt ? lease.available : 0;
    return Math.min(this.#rule.limit, Math.floor(held) + lease.centralRemaining);
  }

  #granted(lease: KeyLease, now: number): Decision {
    const rule = this.#rule;
    const resetAfterMs = this.#shape.windowAt !== undefined ? Math.max(0, lease.expiresAt - now) : 0;
    return this.#marked({
      allowed: true,
      limit: rule.limit,
      remaining: this.#remaining(lease, now),
      retryAfterMs: 0,
      resetAfterMs,
      waitMs: 0,
      rule: rule.name,
    });
  }

  #denied(lease: KeyLease, retryAfterMs: number): Decision {
    const rule = this.#rule;
    return this.#marked({
      allowed: false,
      limit: rule.limit,
      // Not now: what this node holds is too little, and Redis said the rest is spent.
      remaining: Math.floor(lease.available),
      retryAfterMs,
      resetAfterMs: retryAfterMs,
      waitMs: 0,
      rule: rule.name,
    });
  }

  /** `decision` marked with the configuration it was made under (a changed one's version, an override). */
  #marked(decision: Decision): Decision {
    const version = this.#live.version();
    const versioned = version > 1 ? { ...decision, configVersion: version } : decision;
    return this.#live.override ? { ...versioned, override: true } : versioned;
  }

  /**
   * This node's view: the allowance as it knows it, and whether a request would be tried now; for a key it
   * holds no lease of, the key's central state (what the fleet has left to lease: a key too cold for a lease is
   * decided there too, and the CLI's inspect reads it so). Consumes nothing.
   */
  peek(key: string): Decision | Promise<Decision> {
    const now = this.#clock.now();
    const lease = this.#leases.peek(key);
    if (lease === undefined) return this.#exact.peek(key);
    const live = now < lease.expiresAt ? lease.available : 0;
    if (live >= 1 || now >= lease.emptyUntil) return this.#granted(lease, now);
    return this.#denied(lease, lease.emptyUntil - now);
  }

  /** Forgets the key centrally and here (see LeaseControls.reset). */
  reset(key: string): Promise<void> {
    return this.#controls.reset(key);
  }

  /** Gives back to this node's lease what it spent there, else to the central state (see LeaseControls.refund). */
  refund(key: string, asked: Permits, grantedMsAgo: number, grant?: GrantSource): void | Promise<void> {
    return this.#controls.refund(key, permitsOfRule(asked, this.#rule), grantedMsAgo, grant);
  }

  /** Takes from this node's lease, then from the central state past its limit (see LeaseControls.penalize). */
  async penalize(key: string, asked: Permits): Promise<void> {
    // async: a count the rule cannot take rejects, as a failed penalty does, rather than throwing.
    return this.#controls.penalize(key, permitsOfRule(asked, this.#rule));
  }

  #giveBack(key: string, lease: KeyLease): Promise<void> {
    return this.#central.giveBack(key, this.#shape, lease);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const leases = [...this.#leases.entries()];
    await Promise.all(
      leases.map(async ([key, lease]) => {
        // A lease in flight is waited for (within the deadline) so its permits can go back too.
        if (lease.pending !== undefined)
          await withDeadline(lease.pending, this.#o.timeoutMs, 'a lease').catch(() => undefined);
        await withDeadline(this.#giveBack(key, lease), this.#o.timeoutMs, 'a lease hand-back').catch(() => undefined);
      }),
    );
    this.#leases.clear();
  }

  /**
   * `key` is decided by other rules from now on (an override set or removed, see LiveBinding): what this node
   * holds of its lease goes back to Redis, before the key's states are carried to its new rules.
   */
  forget(key: string): void {
    const lease = this.#leases.get(key);
    this.#leases.delete(key);
    this.#cold.delete(key);
    if (lease !== undefined && lease.available >= 1) void this.#giveBack(key, lease).catch(() => {});
  }

  /** No deny cache here (see VersionBinding); a lease's spent central state is only this key's (see heard). */
  forgetAll(): void {}

  /**
   * A reset or refund of `key` on some node (its message on the limiter's channel): the central state this
   * node's lease found spent may have permits again, so the next request asks Redis instead of being denied
   * until then. What the lease holds stays this node's.
   */
  heard(key: string): void {
    const lease = this.#leases.peek(key);
    if (lease !== undefined) lease.emptyUntil = Number.NEGATIVE_INFINITY;
  }

  /** The limiter's prefix (its name in events). */
  get prefix(): string {
    return this.#prefix;
  }

  /**
   * Charges Redis, answering again, with what the fail mode granted past this node's leases while it was away:
   * on the key's central state, by the exact binding that shares it (see ExactBinding.settleFallback).
   */
  settleFallback(): Promise<{ keys: number; permits: number; kept: number }> {
    return this.#exact.settleFallback();
  }

  /** Resolves once no lease of this binding is in flight (see LeasedStore.settled). */
  async settled(): Promise<void> {
    const pending = [...this.#leases.values()].flatMap((lease) => (lease.pending === undefined ? [] : [lease.pending]));
    await Promise.allSettled(pending);
  }

  /** The limiter closed: its unspent permits go back to Redis (see close), then the store lets it go. */
  async unbind(): Promise<void> {
    if (this.#closed) return;
    try {
      await this.close();
    } finally {
      this.#unbind();
    }
  }
}

/** This node's lease on one key, and the key's recent demand here (the batch follows it). */
interface KeyLease extends HeldLease {
  readonly meter: DemandMeter;
  /** When Redis last answered a lease of the key (this process's clock): a spent central state is trusted from it. */
  answeredAt: number;
}

/** One lease is at most burst / (HOARDING_DIVISOR x live lessees) unless maxBatch says otherwise. */
const HOARDING_DIVISOR = 4;

/**
 * A lease pays once a key's demand fills a batch of this many permits within targetMs. Below it, a lease
 * costs more than it saves: one lease call runs about 7 Redis commands (its lessee bookkeeping, the read and
 * the write) and travels alone, where exact decisions cost about 1 command each and share one script call
 * with up to 63 other keys' (measured over 10,000 keys at 128 in flight: batches of 2-4 made leased mode
 * 0.75x exact at 1.8 Redis commands per decision).
 */
export const LEASE_PAYS_AT = 8;
