import {
  type Algorithm,
  type BoundStore,
  type Clock,
  type Decision,
  MemoryStore,
  type Permits,
  type RuleSet,
} from '@sluice/core';
import {
  type FleetShare,
  describeValue,
  keyCache,
  permitsOfRule,
  shareOf,
  sharedRule,
  uniformPermits,
  type SemaphoreBinding,
  type SemaphoreSpec,
} from '@sluice/core/store-kit';
import { SluiceRangeError } from '@sluice/core';

/** What a Redis-backed store does while Redis does not answer within `timeoutMs`, or answers an error. */
export type FailMode = 'local' | 'open' | 'closed';

/** Every fail mode, in the order the docs list them. */
export const FAIL_MODES: readonly FailMode[] = ['local', 'open', 'closed'];

/** The fail mode of every Redis-backed store unless its `failMode` says otherwise. */
export const DEFAULT_FAIL_MODE: FailMode = 'local';

/**
 * A `failMode` option's check.
 * @example
 * const failMode = failModeValue('failMode', options.failMode)
 */
export function failModeValue(name: string, value: unknown): FailMode {
  if (!FAIL_MODES.includes(value as FailMode)) {
    throw new SluiceRangeError(name, value, `${name} must be 'local', 'open' or 'closed', got ${describeValue(value)}`);
  }
  return value as FailMode;
}

/**
 * The answer of `'open'` or `'closed'` for a request of `permits` under `rule`, the same on every mode:
 * open allows and reports the rule's limit less the request; closed denies and asks to retry after
 * `timeoutMs`, when Redis may answer again. Neither knows when the rule resets (resetAfterMs 0).
 * @example
 * return failModeDecision(rule, 'closed', permits, timeoutMs) // denied, retry after timeoutMs
 */
export function failModeDecision(
  rule: Algorithm,
  mode: 'open' | 'closed',
  permits: number,
  timeoutMs: number,
): Decision {
  const open = mode === 'open';
  return {
    allowed: open,
    limit: rule.limit,
    remaining: open ? Math.max(0, rule.limit - permits) : 0,
    retryAfterMs: open ? 0 : timeoutMs,
    resetAfterMs: 0,
    waitMs: 0,
    rule: rule.name,
  };
}

/**
 * The most keys whose 'local' grants one limiter remembers, to charge to Redis when it answers again (see
 * FallbackBinding.takeCharges): grants to keys past it are never charged (an outage over that many keys).
 */
export const MAX_CHARGED_KEYS = 10_000;

/** What a store's fallback needs: the mode, this process's clock and memory bound, and the fleet's shares. */
export interface FallbackOptions {
  readonly mode: FailMode;
  readonly clock: Clock;
  /** The most keys 'local' keeps in this process, over every limiter of the store. */
  readonly maxKeys: number;
  /** 'closed' asks a caller to retry after this long. */
  readonly timeoutMs: number;
}

/**
 * The one fail mode of every Redis-backed store (exact, leased, the semaphore): what decides while Redis is
 * away. `'local'` holds this node's share of each limit in this process's memory: each rule held at the share
 * the store knows of its fleet (sharedRule: live nodes seen in Redis, never the whole limit on every node),
 * a state carried over, never dropped, when the share changes; what it grants is charged to Redis once Redis
 * answers again (takeCharges), so a fleet's grants through an outage count against the limit after it too.
 * `'open'` allows and `'closed'` denies, keeping nothing. Decisions it makes are marked `source: 'fallback'`,
 * so a refund of one comes back here (and to Redis only for what was charged there).
 * @example
 * const fallback = new Fallback({ mode: 'local', clock: systemClock, maxKeys: 100_000, timeoutMs: 50 })
 * const decision = fallback.bind(ruleSet, presence.share('api')).decide('user:1', 1, 0, false) // source: 'fallback'
 */
export class Fallback {
  readonly #o: FallbackOptions;
  /** 'local': the states, every limiter's in its own namespace of one bounded store. */
  readonly #memory: MemoryStore | undefined;

  constructor(options: FallbackOptions) {
    this.#o = options;
    this.#memory =
      options.mode === 'local' ? new MemoryStore({ clock: options.clock, maxKeys: options.maxKeys }) : undefined;
  }

  get mode(): FailMode {
    return this.#o.mode;
  }

  /**
   * The fail mode for one limiter's rules (one plan of them: a limiter's plans share their states by name),
   * holding `share` of each rule: this node's part of the limiter's limits, as the store knows its fleet.
   */
  bind(ruleSet: RuleSet, share: FleetShare): FallbackBinding {
    const memory = this.#memory;
    if (memory === undefined) return new StatelessFallback(this.#o, ruleSet.rules);
    const shared = (rules: readonly Algorithm[]) => rules.map((rule) => sharedRule(rule, share));
    const bound = memory.bind({
      rules: shared(ruleSet.rules),
      prefix: ruleSet.prefix,
      ...(ruleSet.plans === undefined ? {} : { plans: shared(ruleSet.plans) }),
      ...(ruleSet.apart === undefined ? {} : { apart: ruleSet.apart }),
    });
    return new LocalFallback(bound, share, ruleSet.rules);
  }

  /** 'local': this node's `share` of a concurrency limiter's slots, counted here (its max follows the fleet). */
  bindSemaphore(spec: SemaphoreSpec, share: FleetShare): SemaphoreBinding | undefined {
    if (this.#memory === undefined) return undefined;
    return this.#memory.bindSemaphore({
      prefix: spec.prefix,
      leaseMs: spec.leaseMs,
      get max() {
        return shareOf(spec.max, share.fraction);
      },
    });
  }
}

/** One limiter's fail mode: the decisions and controls a store turns to while Redis is away. */
export interface FallbackBinding {
  readonly mode: FailMode;
  /** True for 'local': controls apply to its state; 'open' and 'closed' keep none (their controls do nothing). */
  readonly keepsState: boolean;
  /** The fail mode's decision, marked `source: 'fallback'`. */
  decide(key: string, permits: Permits, maxWaitMs: number, peek: boolean): Decision;
  /**
   * Gives back what the fail mode granted (nothing for 'open', which counted nothing). Returns how many of the
   * permits Redis was never charged with (per rule when they were per-rule permits); the rest went to Redis when
   * it answered again (takeCharges).
   */
  refund(key: string, permits: Permits, grantedMsAgo: number): Permits;
  /**
   * 'local': per key, what the fail mode's grants while Redis was away still weigh on its state (the permits
   * granted, refunds taken off, but no more than the local state shows spent now: grants a bucket refilled or
   * a window that rolled over since count no longer), forgotten here: the store charges them to Redis once it
   * answers again. Empty for 'open' and 'closed'.
   */
  takeCharges(): [key: string, permits: Permits][];
  /** Charges Redis could not take after all: kept for the next time it answers. */
  keepCharge(key: string, permits: Permits): void;
  /** Redis counted this grant after all (its answer came past the deadline): it is not charged again. */
  dropCharge(key: string, permits: Permits): void;
  /**
   * What Redis last answered for `key`: 'local' starts the key's state from it when Redis next fails (this
   * node's share of what the fleet had left), instead of a full share on every node.
   */
  remember(key: string, decision: Decision): void;
  /** Takes `permits` from the fail mode's state of `key` while Redis is away (see keepsState). */
  penalize(key: string, permits: Permits): void;
  /** Bans `key` in the fail mode's state while Redis is away (see keepsState). */
  block(key: string, ms: number): void;
  /** Lifts a ban in the fail mode's state while Redis is away (see keepsState). */
  unblock(key: string): void;
  /** Forgets the key here (a reset on Redis forgets it everywhere). */
  reset(key: string): void;
  /** A ban Redis reported: the fail mode keeps it, so a key banned on Redis stays banned through an outage. */
  learnBan(key: string, restMs: number): void;
  /** The limiter closed: the fail mode drops what it held for it. */
  unbind(): void;
}

const fromFallback = (decision: Decision): Decision => ({ ...decision, source: 'fallback' });

class LocalFallback implements FallbackBinding {
  readonly mode = 'local';
  readonly keepsState = true;
  /**
   * Permits granted per key since Redis last took the charges, each rule's count in rule order (bounded by
   * MAX_CHARGED_KEYS): per-rule permits charge each rule its own.
   */
  readonly #charges = new Map<string, number[]>();
  /** Per key, the part of the limit Redis last said was used, until the fail mode first decides the key. */
  readonly #lastOnRedis = keyCache<string, number>(MAX_CHARGED_KEYS);

  constructor(
    private readonly bound: BoundStore,
    private readonly share: FleetShare,
    private readonly rules: readonly Algorithm[],
  ) {}

  /** Each rule's count of `permits`, in rule order. */
  #counts(permits: Permits): number[] {
    return this.rules.map((rule) => permitsOfRule(permits, rule));
  }

  /** Counts in rule order as Permits: one number when every rule counts the same. */
  #permits(counts: readonly number[]): Permits {
    const byRule = Object.fromEntries(this.rules.map((rule, r) => [rule.name, counts[r] as number]));
    return uniformPermits(byRule, this.rules) ?? byRule;
  }

  remember(key: string, decision: Decision): void {
    if (decision.limit > 0)
      this.#lastOnRedis.set(key, 1 - Math.min(decision.remaining, decision.limit) / decision.limit);
  }

  /** The key's local state made at least as spent as Redis last said the fleet's was (this node's share of it). */
  #startFromRedis(key: string): void {
    const used = this.#lastOnRedis.get(key);
    if (used === undefined) return;
    this.#lastOnRedis.delete(key);
    const now = this.bound.peek(key) as Decision;
    const held = shareOf(now.limit, this.share.fraction);
    // Rounded up: a share of what was left, never more.
    const missing = Math.ceil(held * used - 1e-9) - Math.max(0, held - now.remaining);
    if (missing > 0) void this.bound.penalize?.(key, missing);
  }

  decide(key: string, permits: Permits, maxWaitMs: number, peek: boolean): Decision {
    this.#startFromRedis(key);
    const b = this.bound;
    const decision = (peek ? b.peek(key) : b.consume(key, permits, maxWaitMs)) as Decision;
    if (!peek && decision.allowed) this.keepCharge(key, permits);
    return fromFallback(decision);
  }

  refund(key: string, permits: Permits, grantedMsAgo: number): Permits {
    void this.bound.refund?.(key, permits, grantedMsAgo);
    const charged = this.#charges.get(key);
    const asked = this.#counts(permits);
    const uncharged = asked.map((count, r) => Math.min(charged?.[r] ?? 0, count));
    if (charged !== undefined) this.#set(key, charged, uncharged, -1);
    return this.#permits(uncharged);
  }

  takeCharges(): [string, Permits][] {
    const charges: [string, Permits][] = [];
    for (const [key, granted] of this.#charges) {
      // What the local state still holds spent: an hour-long outage's grants are not all owed to a bucket that
      // refilled meanwhile, nor a past window's to the current one. A decision names the binding rule and the
      // whole rule's limit (this node's state holds its share of it): the part of that rule's grants still
      // spent is the part owed of every rule's.
      const now = this.bound.peek(key) as Decision;
      const spent = Math.max(0, shareOf(now.limit, this.share.fraction) - now.remaining);
      const binding = Math.max(
        0,
        this.rules.findIndex((rule) => rule.name === now.rule),
      );
      const grantedThere = granted[binding] ?? 0;
      const owed = grantedThere === 0 ? 0 : Math.min(1, spent / grantedThere);
      const counts = granted.map((count) => Math.floor(count * owed + 1e-9));
      if (counts.some((count) => count > 0)) charges.push([key, this.#permits(counts)]);
    }
    this.#charges.clear();
    return charges;
  }

  dropCharge(key: string, permits: Permits): void {
    const charged = this.#charges.get(key);
    if (charged !== undefined) this.#set(key, charged, this.#counts(permits), -1);
  }

  keepCharge(key: string, permits: Permits): void {
    const charged = this.#charges.get(key);
    if (charged === undefined && this.#charges.size >= MAX_CHARGED_KEYS) return;
    this.#set(key, charged ?? this.rules.map(() => 0), this.#counts(permits), 1);
  }

  /** The key's charges plus (`sign` 1) or minus (-1, never below 0) `counts`; none left forgets the key. */
  #set(key: string, charged: readonly number[], counts: readonly number[], sign: 1 | -1): void {
    const next = charged.map((count, r) => Math.max(0, count + sign * (counts[r] ?? 0)));
    if (next.some((count) => count > 0)) this.#charges.set(key, next);
    else this.#charges.delete(key);
  }

  penalize(key: string, permits: Permits): void {
    void this.bound.penalize?.(key, permits);
  }

  block(key: string, ms: number): void {
    void this.bound.block?.(key, ms);
  }

  unblock(key: string): void {
    void this.bound.unblock?.(key);
  }

  reset(key: string): void {
    void this.bound.reset(key);
  }

  learnBan(key: string, restMs: number): void {
    void this.bound.block?.(key, restMs);
  }

  unbind(): void {
    void this.bound.unbind?.();
  }
}

class StatelessFallback implements FallbackBinding {
  readonly keepsState = false;

  constructor(
    private readonly o: FallbackOptions,
    private readonly rules: readonly Algorithm[],
  ) {}

  get mode(): FailMode {
    return this.o.mode;
  }

  decide(_key: string, permits: Permits): Decision {
    const mode = this.o.mode === 'open' ? 'open' : 'closed';
    const rule = this.rules[0] as Algorithm;
    return fromFallback(failModeDecision(rule, mode, permitsOfRule(permits, rule), this.o.timeoutMs));
  }

  /** 'open' counted its grants nowhere, 'closed' granted none: Redis was never charged with any. */
  refund(_key: string, permits: Permits): Permits {
    return permits;
  }
  takeCharges(): [string, Permits][] {
    return [];
  }
  keepCharge(): void {}
  dropCharge(): void {}
  remember(): void {}
  penalize(): void {}
  block(): void {}
  unblock(): void {}
  reset(): void {}
  learnBan(): void {}
  unbind(): void {}
}
