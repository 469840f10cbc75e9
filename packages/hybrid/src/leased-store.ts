import {
  type Algorithm,
  type BoundStore,
  type Clock,
  type Decision,
  MemoryStore,
  type RuleSet,
  type Store,
  systemClock,
} from '@sluice/core';
import type { FailMode, RedisClient } from '@sluice/redis';
import { reconnectNow, stateKey } from '@sluice/redis';
import { EventEmitter } from 'eventemitter3';
import { LRUCache } from 'lru-cache';
import { MISSED, withinDeadline } from './deadline.js';
import { DemandMeter } from './demand-meter.js';
import { type LeaseShape, leaseShape, requestLease, returnLease } from './lease-client.js';
import { burstOf } from './rule-rate.js';
import { scaledRule } from './scaled-rule.js';

/** One lease taken from Redis, as the `lease` event reports it. */
export interface LeaseEvent {
  readonly key: string;
  /** Permits asked for: the adaptive batch, or what the request needed. */
  readonly want: number;
  readonly granted: number;
  /** Nodes that leased this key recently (they share the hoarding cap). */
  readonly liveNodes: number;
  /** True when asked for ahead of need (the low-water mark), false when a caller was waiting for it. */
  readonly prefetch: boolean;
}

export interface LeasedEvents {
  /** A lease came back from Redis. */
  lease: [LeaseEvent];
  /** Redis failed or missed the deadline: decisions past this node's lease follow failMode until it answers again. */
  fallback: [Error];
  /** Redis answered again after a fallback. */
  recovered: [];
}

export interface LeasedStoreOptions {
  redis: RedisClient;
  targetMs: number;
  maxBatch: number | undefined;
  lowWater: number;
  liveMs: number;
  timeoutMs: number;
  failMode: FailMode;
  clock: Clock | undefined;
  maxKeys: number;
  nodeId: string;
  events: EventEmitter<LeasedEvents>;
}

/** This node's lease on one key. */
interface KeyLease {
  /** Permits debited centrally and not yet spent here. */
  available: number;
  /** When the lease dies (its window ends), on this node's clock. */
  expiresAt: number;
  windowStart: number;
  /** Until then Redis said it had nothing for us: deny locally instead of asking. */
  emptyUntil: number;
  pending: Promise<void> | undefined;
  readonly meter: DemandMeter;
}

/** One lease is at most burst / (HOARDING_DIVISOR x live lessees) unless maxBatch says otherwise. */
const HOARDING_DIVISOR = 4;

/** Without a successful lease for this long after a failure, one probe call tests Redis again. */
const PROBE_INTERVAL_MS = 100;

/**
 * The store behind leasedLimiter: the bucket lives in Redis, this node spends leased batches locally.
 * Every permit it grants was debited centrally first, so the fleet admits at most the central limit plus
 * what nodes hold (at most one batch each); a node that dies strands at most its batch.
 */
export class LeasedStore implements Store {
  readonly clock: Clock | undefined;
  readonly #o: LeasedStoreOptions;
  readonly #local: Clock;
  readonly #bindings: LeasedBinding[] = [];

  constructor(options: LeasedStoreOptions) {
    this.#o = options;
    this.clock = options.clock;
    this.#local = options.clock ?? systemClock;
  }

  bind(ruleSet: RuleSet): BoundStore {
    const binding = new LeasedBinding(this.#o, this.#local, ruleSet.rules[0] as Algorithm, ruleSet.prefix);
    this.#bindings.push(binding);
    return binding;
  }

  /** Hands every unspent permit back to Redis (bounded by timeoutMs per key batch). */
  async close(): Promise<void> {
    await Promise.all(this.#bindings.map((b) => b.close()));
  }
}

class LeasedBinding implements BoundStore {
  readonly #o: LeasedStoreOptions;
  readonly #clock: Clock;
  readonly #rule: Algorithm;
  readonly #prefix: string;
  readonly #shape: LeaseShape;
  readonly #burst: number;
  readonly #leases: LRUCache<string, KeyLease>;
  #liveNodes = 1;
  #failing = false;
  #nextProbeAt = 0;
  #fallback: { fraction: number; bound: BoundStore } | undefined;
  #closed = false;

  constructor(o: LeasedStoreOptions, clock: Clock, rule: Algorithm, prefix: string) {
    this.#o = o;
    this.#clock = clock;
    this.#rule = rule;
    this.#prefix = prefix;
    this.#shape = leaseShape(rule);
    this.#burst = burstOf(rule);
    this.#leases = new LRUCache<string, KeyLease>({
      max: o.maxKeys,
      // A lease pushed out of the cache still holds debited permits: give them back.
      dispose: (lease, key, reason) => {
        if (reason === 'evict' && lease.available >= 1) void this.#giveBack(key, lease).catch(() => {});
      },
    });
  }

  // '~' never appears in a rule name, so these never collide with an exact-mode limiter's state keys.
  #stateKey(key: string): string {
    return stateKey(this.#prefix, key, `lease~${this.#rule.name}`);
  }

  #lesseesKey(key: string): string {
    return stateKey(this.#prefix, key, `lessees~${this.#rule.name}`);
  }

  /**
   * The batch to ask for: about targetMs of this key's recent demand. The script caps it at
   * burst / (4 x live lessees) from the membership it sees in the same call, unless maxBatch is set.
   */
  #batch(lease: KeyLease, now: number): number {
    const wanted = Math.ceil((lease.meter.perSecond(now) * this.#o.targetMs) / 1000);
    return Math.min(Math.max(wanted, 1), this.#o.maxBatch ?? this.#burst, this.#burst);
  }

  consume(key: string, permits: number): Decision | Promise<Decision> {
    const now = this.#clock.now();
    let lease = this.#leases.get(key);
    if (lease === undefined) {
      lease = { available: 0, expiresAt: Number.POSITIVE_INFINITY, windowStart: 0, emptyUntil: Number.NEGATIVE_INFINITY, pending: undefined, meter: new DemandMeter(Math.max(this.#o.targetMs, 10), now) };
      this.#leases.set(key, lease);
    }
    lease.meter.add(permits, now);
    if (now >= lease.expiresAt) lease.available = 0;
    if (lease.available >= permits) {
      lease.available -= permits;
      this.#prefetch(key, lease, now);
      return this.#granted(lease, now);
    }
    if (permits > this.#burst) return this.#denied(lease, Number.POSITIVE_INFINITY);
    if (this.#failing) return this.#fallbackDecision(key, lease, permits, now, undefined);
    if (lease.pending === undefined && now < lease.emptyUntil) return this.#denied(lease, lease.emptyUntil - now);
    return this.#leaseThenDecide(key, lease, permits);
  }

  async #leaseThenDecide(key: string, lease: KeyLease, permits: number): Promise<Decision> {
    if (lease.pending === undefined) this.#startLease(key, lease, Math.max(this.#batch(lease, this.#clock.now()), permits));
    let outcome: void | typeof MISSED;
    try {
      outcome = await withinDeadline(lease.pending as Promise<void>, this.#o.timeoutMs);
    } catch (error) {
      return this.#fallbackDecision(key, lease, permits, this.#clock.now(), error);
    }
    const now = this.#clock.now();
    if (outcome === MISSED) {
      return this.#fallbackDecision(key, lease, permits, now, new Error(`Redis did not answer a lease within ${this.#o.timeoutMs} ms`));
    }
    if (now >= lease.expiresAt) lease.available = 0;
    if (lease.available >= permits) {
      lease.available -= permits;
      return this.#granted(lease, now);
    }
    // Concurrent callers took what came, or Redis had too little: retry when it said more would be there.
    return this.#denied(lease, Math.max(lease.emptyUntil - now, 1));
  }

  #startLease(key: string, lease: KeyLease, want: number, prefetch = false): void {
    const sentAt = this.#clock.now();
    const ask = Math.min(Math.max(want - lease.available, 1), this.#burst);
    const call = requestLease(this.#o.redis, this.#stateKey(key), this.#lesseesKey(key), this.#shape, ask, this.#o.nodeId, this.#o.liveMs, this.#o.clock?.now(), this.#o.maxBatch === undefined ? HOARDING_DIVISOR : 0)
      .then((reply) => {
        const now = this.#clock.now();
        if (this.#shape.windowed) {
          // Measured from the send: the window ends no later than that on this node's clock.
          if (reply.windowStart !== lease.windowStart || now >= lease.expiresAt) lease.available = 0;
          lease.windowStart = reply.windowStart;
          lease.expiresAt = sentAt + reply.expiresInMs;
        }
        lease.available += reply.granted;
        // A short lease emptied the central limiter: ask again when a batch's worth is back, not per permit.
        lease.emptyUntil = reply.granted < ask && reply.retryMs > 0 ? now + reply.retryMs : Number.NEGATIVE_INFINITY;
        this.#liveNodes = Math.max(1, reply.liveNodes);
        this.#recovered();
        this.#o.events.emit('lease', { key, want: ask, granted: reply.granted, liveNodes: this.#liveNodes, prefetch });
        if (this.#closed && lease.available >= 1) return this.#giveBack(key, lease).then(() => {});
        return undefined;
      })
      .finally(() => {
        lease.pending = undefined;
      });
    // A failed lease is reported once, here; callers waiting on it decide by failMode.
    call.catch((error: unknown) => this.#fail(error));
    lease.pending = call;
  }

  /** At the low-water mark, the next batch is asked for before callers run out, so they never wait on Redis. */
  #prefetch(key: string, lease: KeyLease, now: number): void {
    if (lease.pending !== undefined || this.#failing || this.#closed || now < lease.emptyUntil) return;
    const batch = this.#batch(lease, now);
    if (lease.available >= batch * this.#o.lowWater) return;
    this.#startLease(key, lease, batch, true);
  }

  #fail(error: unknown): void {
    this.#nextProbeAt = this.#clock.now() + PROBE_INTERVAL_MS;
    if (this.#failing) return;
    this.#failing = true;
    this.#o.events.emit('fallback', error instanceof Error ? error : new Error(String(error)));
  }

  #recovered(): void {
    if (!this.#failing) return;
    this.#failing = false;
    this.#o.events.emit('recovered');
  }

  #fallbackDecision(key: string, lease: KeyLease, permits: number, now: number, error: unknown): Decision {
    if (error !== undefined) this.#fail(error);
    else if (now >= this.#nextProbeAt) {
      // A probe every interval: a lease that succeeds ends the fallback for every key. The client is asked
      // to reconnect even while earlier probes still sit in its offline queue, or its backoff would grow.
      this.#nextProbeAt = now + PROBE_INTERVAL_MS;
      reconnectNow(this.#o.redis);
      if (lease.pending === undefined) this.#startLease(key, lease, this.#batch(lease, now));
    }
    const rule = this.#rule;
    if (this.#o.failMode === 'open') return { allowed: true, limit: rule.limit, remaining: 0, retryAfterMs: 0, resetAfterMs: 0, waitMs: 0, rule: rule.name };
    if (this.#o.failMode === 'closed') return this.#denied(lease, this.#o.timeoutMs);
    return this.#localFallback().consume(key, permits, 0) as Decision;
  }

  /** failMode 'local': the core algorithm on this node, holding its share of the limit (1 / live lessees). */
  #localFallback(): BoundStore {
    const fraction = 1 / this.#liveNodes;
    if (this.#fallback?.fraction !== fraction) {
      const store = new MemoryStore({ clock: this.#clock, maxKeys: this.#o.maxKeys });
      this.#fallback = { fraction, bound: store.bind({ rules: [scaledRule(this.#rule, fraction)], prefix: this.#prefix }) };
    }
    return this.#fallback.bound;
  }

  #granted(lease: KeyLease, now: number): Decision {
    const rule = this.#rule;
    const resetAfterMs = this.#shape.windowed ? Math.max(0, lease.expiresAt - now) : 0;
    return { allowed: true, limit: rule.limit, remaining: Math.floor(lease.available), retryAfterMs: 0, resetAfterMs, waitMs: 0, rule: rule.name };
  }

  #denied(lease: KeyLease, retryAfterMs: number): Decision {
    const rule = this.#rule;
    return { allowed: false, limit: rule.limit, remaining: Math.floor(lease.available), retryAfterMs, resetAfterMs: retryAfterMs, waitMs: 0, rule: rule.name };
  }

  /** This node's view: what its lease holds, and whether a request would be tried now. Consumes nothing. */
  peek(key: string): Decision {
    const now = this.#clock.now();
    const lease = this.#leases.peek(key);
    if (lease === undefined) return { allowed: true, limit: this.#rule.limit, remaining: 0, retryAfterMs: 0, resetAfterMs: 0, waitMs: 0, rule: this.#rule.name };
    const live = now < lease.expiresAt ? lease.available : 0;
    if (live >= 1 || now >= lease.emptyUntil) return { ...this.#granted(lease, now), remaining: Math.floor(live) };
    return this.#denied(lease, lease.emptyUntil - now);
  }

  /** Forgets the key centrally (every node's next lease starts fresh) and drops this node's lease. */
  async reset(key: string): Promise<void> {
    this.#leases.delete(key);
    await this.#o.redis.del(this.#stateKey(key), this.#lesseesKey(key));
  }

  async #giveBack(key: string, lease: KeyLease): Promise<void> {
    const permits = Math.floor(lease.available);
    if (permits < 1 || (this.#shape.windowed && this.#clock.now() >= lease.expiresAt)) return;
    lease.available -= permits;
    await returnLease(this.#o.redis, this.#stateKey(key), this.#shape, permits, lease.windowStart, this.#o.clock?.now());
  }

  async close(): Promise<void> {
    this.#closed = true;
    const leases = [...this.#leases.entries()];
    await Promise.all(
      leases.map(async ([key, lease]) => {
        // A lease in flight is waited for (within the deadline) so its permits can go back too.
        if (lease.pending !== undefined) await withinDeadline(lease.pending, this.#o.timeoutMs).catch(() => undefined);
        await withinDeadline(this.#giveBack(key, lease), this.#o.timeoutMs).catch(() => undefined);
      }),
    );
    this.#leases.clear();
  }
}
