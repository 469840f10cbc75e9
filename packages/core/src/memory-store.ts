import type { LRUCache } from 'lru-cache';
import { keyCache } from './key-cache.js';
import { PrefixGuard } from './prefix-guard.js';
import type { Algorithm } from './algorithms/algorithm.js';
import { identityOf } from './algorithms/rule-name.js';
import { type Clock, systemClock } from './clock.js';
import type { Decision } from './decision.js';
import { SluiceError, SluiceRangeError } from './errors.js';
import { decidePolicy, ruleDecision } from './policy.js';
import type { BoundStore, RuleSet, Store } from './store.js';
import { optionalClock, optionsObject, positiveInteger } from './validate.js';

export interface MemoryStoreOptions {
  /**
   * The most keys held at once; the least recently used key is dropped beyond it, so a flood of
   * attacker-chosen keys cannot grow memory without bound. A dropped key starts afresh.
   * @default 100_000
   */
  maxKeys?: number;
  /**
   * Time for decisions and for expiring states.
   * @default systemClock
   */
  clock?: Clock;
}

/**
 * One key's state and when it stops mattering. A grant updates the cell in place, so a decision costs
 * one cache lookup; expiry is judged against the decision's own clock reading, so it can never disagree
 * with the decision (no second clock, no timers).
 */
interface Cell {
  state: unknown;
  /**
   * When prune() may drop the state: whole milliseconds since the store's origin, rounded up plus one, a
   * small integer that V8 keeps unboxed for the first 12 days of a store's life (a double costs a 16-byte
   * box per key). It never decides a request (see StoreTime.live).
   */
  expiresAt: number;
}

/**
 * An in-process store: states in an LRU cache (lru-cache) bounded by `maxKeys`, each state expiring when
 * it stops mattering (a full bucket, a past window). Exact for this process.
 *
 * @example
 * const store = memoryStore({ maxKeys: 50_000 })
 * const perIp = createLimiter({ algorithm: fixedWindow({ limit: 60, windowMs: 60_000 }), store, prefix: 'ip' })
 */
export class MemoryStore implements Store {
  readonly clock: Clock;
  readonly maxKeys: number;
  readonly #cache: LRUCache<string, Cell>;
  #exclusive = false;
  #bindings = 0;
  readonly #prefixes = new PrefixGuard();
  #closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    optionsObject('memoryStore options', options, false);
    this.maxKeys = options.maxKeys === undefined ? 100_000 : positiveInteger('maxKeys', options.maxKeys);
    this.clock = optionalClock('clock', options.clock) ?? systemClock;
    this.#cache = keyCache<string, Cell>(this.maxKeys);
    this.#origin = this.clock.now();
  }

  readonly #origin: number;

  /** Keys currently held (expired ones linger until touched, evicted or pruned). */
  get size(): number {
    return this.#cache.size;
  }

  /** Drops every expired state now instead of when it is next touched or evicted. */
  prune(): void {
    const now = this.clock.now() - this.#origin;
    const expired: string[] = [];
    for (const [key, cell] of this.#cache.entries()) if (cell.expiresAt <= now) expired.push(key);
    for (const key of expired) this.#cache.delete(key);
  }

  clear(): void {
    this.#cache.clear();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#cache.clear();
  }

  /**
   * @param exclusive the limiter created this store for itself: keys need no prefix, and no other
   * limiter may bind it.
   */
  bind(ruleSet: RuleSet, exclusive = false): BoundStore {
    if (this.#closed) throw new SluiceError('CLOSED', 'memoryStore is closed');
    if (this.#exclusive || (exclusive && this.#bindings > 0)) {
      throw new SluiceRangeError('store', 'memoryStore', 'this memoryStore belongs to the limiter that created it; create one with memoryStore() to share it');
    }
    const { rules } = ruleSet;
    const release = exclusive ? undefined : this.#prefixes.claim(ruleSet.prefix, rules);
    this.#exclusive = exclusive;
    this.#bindings++;
    // The prefix cannot contain '{', so the first '{' ends it and two namespaces never collide.
    const prefix = exclusive ? '' : `${ruleSet.prefix}{`;
    const time = new StoreTime(this.clock, this.#origin);
    let bound = true;
    const unbind = (): void => {
      if (!bound) return;
      bound = false;
      this.#bindings--;
      release?.();
    };
    if (rules.some((rule) => rule.key !== undefined)) return new IdentityBinding(this.#cache, time, rules, ruleSet.prefix, unbind);
    return rules.length === 1
      ? new SingleRuleBinding(this.#cache, time, rules[0] as Algorithm, prefix, unbind)
      : new PolicyBinding(this.#cache, time, rules, prefix, unbind);
  }
}

/** The store's clock, and the cell expiry arithmetic relative to its origin. */
class StoreTime {
  constructor(
    readonly clock: Clock,
    private readonly origin: number,
  ) {}

  /**
   * The state in `cell`. Its expiry never decides anything: a state past its time decides as a fresh one
   * would (the algorithms see to that), so the expiry only tells prune() what it may drop. (Deciding by a
   * rounded expiry once forgot a state a hair early, where the Redis scripts, which keep it, did not.)
   */
  live(cell: Cell | undefined): unknown {
    return cell?.state;
  }

  /** Stores `state` for `key`, reusing the key's cell when it has one. */
  store(cache: LRUCache<string, Cell>, key: string, cell: Cell | undefined, state: unknown, now: number, ttlMs: number): void {
    // A millisecond past the rounded-up end: rounding can never make a state look done before it is.
    const expiresAt = Math.ceil(now - this.origin + ttlMs) + 1;
    if (cell === undefined) cache.set(key, { state, expiresAt });
    else {
      cell.state = state;
      cell.expiresAt = expiresAt;
    }
  }
}

/** The common case, kept free of arrays: one rule, its state stored as is. */
class SingleRuleBinding implements BoundStore {
  constructor(
    private readonly cache: LRUCache<string, Cell>,
    private readonly time: StoreTime,
    private readonly rule: Algorithm,
    private readonly prefix: string,
    readonly unbind: () => void,
  ) {}

  consume(key: string, permits: number, maxWaitMs: number): Decision {
    const k = this.prefix === '' ? key : this.prefix + key;
    const now = this.time.clock.now();
    const cell = this.cache.get(k);
    const before = this.time.live(cell);
    const o = this.rule.consume(before, now, permits, maxWaitMs);
    // A grant, or a denial that anchored a never-seen key; a denial of a known key returns it untouched.
    if (o.state !== before) this.time.store(this.cache, k, cell, o.state, now, o.ttlMs);
    return ruleDecision(this.rule, o);
  }

  peek(key: string): Decision {
    const now = this.time.clock.now();
    const probe = this.rule.consume(this.time.live(this.cache.get(this.prefix + key)), now, 1, 0);
    return { ...ruleDecision(this.rule, probe), remaining: probe.allowed ? probe.remaining + 1 : probe.remaining };
  }

  reset(key: string): void {
    this.cache.delete(this.prefix + key);
  }
}

/** A policy: one cache entry per key holding every rule's state, decided all-or-nothing. */
class PolicyBinding implements BoundStore {
  constructor(
    private readonly cache: LRUCache<string, Cell>,
    private readonly time: StoreTime,
    private readonly rules: readonly Algorithm[],
    private readonly prefix: string,
    readonly unbind: () => void,
  ) {}

  consume(key: string, permits: number): Decision {
    const k = this.prefix + key;
    const now = this.time.clock.now();
    const cell = this.cache.get(k);
    const p = decidePolicy(this.rules, this.time.live(cell) as unknown[] | undefined, now, permits);
    if (p.states !== undefined) this.time.store(this.cache, k, cell, p.states, now, p.ttlMs);
    return p.decision;
  }

  peek(key: string): Decision {
    const now = this.time.clock.now();
    const p = decidePolicy(this.rules, this.time.live(this.cache.get(this.prefix + key)) as unknown[] | undefined, now, 1);
    const d = p.decision;
    return d.allowed ? { ...d, remaining: d.remaining + 1, rules: d.rules?.map((r) => ({ ...r, remaining: r.remaining + 1 })) } : d;
  }

  reset(key: string): void {
    this.cache.delete(this.prefix + key);
  }
}

/**
 * Rules counted against other identities than the request's key (a global rule, a per-tenant rule): one
 * cell per (identity, rule), so every key's requests meet in the shared rule's cell. Decided all-or-nothing
 * like any policy. Cell keys are '\u0001prefix\u0001' + the identity's length + ':' + identity + ':' + rule,
 * which no other binding's keys can equal (a prefix holds no control character).
 */
class IdentityBinding implements BoundStore {
  readonly #namespace: string;
  constructor(
    private readonly cache: LRUCache<string, Cell>,
    private readonly time: StoreTime,
    private readonly rules: readonly Algorithm[],
    prefix: string,
    readonly unbind: () => void,
  ) {
    this.#namespace = `\u0001${prefix}\u0001`;
  }

  #cellKeys(key: string): string[] {
    return this.rules.map((rule) => {
      const identity = identityOf(rule, key);
      return `${this.#namespace}${identity.length}:${identity}:${rule.name}`;
    });
  }

  #decide(key: string, permits: number, maxWaitMs: number, write: boolean): Decision {
    const keys = this.#cellKeys(key);
    const now = this.time.clock.now();
    const cells = keys.map((k) => this.cache.get(k));
    const states = cells.map((cell) => this.time.live(cell));
    if (this.rules.length === 1) {
      const rule = this.rules[0] as Algorithm;
      const o = rule.consume(states[0], now, permits, maxWaitMs);
      if (write && o.state !== states[0]) this.time.store(this.cache, keys[0] as string, cells[0], o.state, now, o.ttlMs);
      return ruleDecision(rule, o);
    }
    const p = decidePolicy(this.rules, states, now, permits);
    if (write && p.states !== undefined) {
      p.states.forEach((state, r) => {
        if (state !== undefined) this.time.store(this.cache, keys[r] as string, cells[r], state, now, p.ttlMs);
      });
    }
    return p.decision;
  }

  consume(key: string, permits: number, maxWaitMs: number): Decision {
    return this.#decide(key, permits, maxWaitMs, true);
  }

  peek(key: string): Decision {
    const d = this.#decide(key, 1, 0, false);
    if (!d.allowed) return d;
    return { ...d, remaining: d.remaining + 1, ...(d.rules ? { rules: d.rules.map((r) => ({ ...r, remaining: r.remaining + 1 })) } : {}) };
  }

  /** Forgets the request key's own rules; rules counted against other identities are shared, and stay. */
  reset(key: string): void {
    const keys = this.#cellKeys(key);
    this.rules.forEach((rule, r) => {
      if (rule.key === undefined) this.cache.delete(keys[r] as string);
    });
  }
}

/** Creates an in-process store; see {@link MemoryStoreOptions}. */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options);
}
