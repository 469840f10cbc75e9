import { LRUCache } from 'lru-cache';
import type { Algorithm } from './algorithms/algorithm.js';
import { type Clock, systemClock } from './clock.js';
import type { Decision } from './decision.js';
import { SluiceError, SluiceRangeError } from './errors.js';
import { decidePolicy, ruleDecision } from './policy.js';
import type { BoundStore, RuleSet, Store } from './store.js';
import { optionsObject, positiveInteger } from './validate.js';

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

/** lru-cache wants a positive integer TTL; round up so a state never expires while it still matters. */
const MAX_TTL_MS = 2 ** 31 - 1;
function cacheTtl(ttlMs: number): number {
  return ttlMs >= MAX_TTL_MS ? MAX_TTL_MS : Math.ceil(ttlMs) + 1;
}

/**
 * An in-process store: states in an LRU cache bounded by `maxKeys`, each state expiring when it stops
 * mattering (a full bucket, a past window). Exact for this process.
 *
 * @example
 * const store = memoryStore({ maxKeys: 50_000 })
 * const perIp = createLimiter({ algorithm: fixedWindow({ limit: 60, windowMs: 60_000 }), store, prefix: 'ip' })
 */
export class MemoryStore implements Store {
  readonly clock: Clock;
  readonly maxKeys: number;
  readonly #cache: LRUCache<string, object>;
  #exclusive = false;
  #bindings = 0;
  #closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    optionsObject('memoryStore options', options, false);
    this.maxKeys = options.maxKeys === undefined ? 100_000 : positiveInteger('maxKeys', options.maxKeys);
    this.clock = options.clock ?? systemClock;
    const clock = this.clock;
    // lru-cache treats a start time of 0 as "no TTL", so its clock is shifted to start at 1.
    const origin = clock.now() - 1;
    this.#cache = new LRUCache<string, object>({
      max: this.maxKeys,
      ttlAutopurge: false,
      ttlResolution: 0,
      perf: { now: () => clock.now() - origin },
    });
  }

  /** Keys currently held (expired ones may linger until touched or evicted). */
  get size(): number {
    return this.#cache.size;
  }

  /** Drops expired states now instead of when they are next touched or evicted. */
  prune(): void {
    this.#cache.purgeStale();
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
    this.#exclusive = exclusive;
    this.#bindings++;
    const { rules } = ruleSet;
    // The prefix cannot contain '{', so the first '{' ends it and two namespaces never collide.
    const prefix = exclusive ? '' : `${ruleSet.prefix}{`;
    return rules.length === 1
      ? new SingleRuleBinding(this.#cache, this.clock, rules[0] as Algorithm, prefix)
      : new PolicyBinding(this.#cache, this.clock, rules, prefix);
  }
}

/** The common case, kept free of arrays: one rule, its state stored as is. */
class SingleRuleBinding implements BoundStore {
  readonly #setOptions = { ttl: 0 };
  constructor(
    private readonly cache: LRUCache<string, object>,
    private readonly clock: Clock,
    private readonly rule: Algorithm,
    private readonly prefix: string,
  ) {}

  consume(key: string, permits: number, maxWaitMs: number): Decision {
    const k = this.prefix === '' ? key : this.prefix + key;
    const before = this.cache.get(k);
    const o = this.rule.consume(before, this.clock.now(), permits, maxWaitMs);
    // A grant, or a denial that anchored a never-seen key; a denial of a known key returns it untouched.
    if (o.state !== before) {
      this.#setOptions.ttl = cacheTtl(o.ttlMs);
      this.cache.set(k, o.state as object, this.#setOptions);
    }
    return ruleDecision(this.rule, o);
  }

  peek(key: string): Decision {
    const state = this.cache.get(this.prefix + key);
    const now = this.clock.now();
    const probe = this.rule.consume(state, now, 1, 0);
    return { ...ruleDecision(this.rule, probe), remaining: probe.allowed ? probe.remaining + 1 : probe.remaining };
  }

  reset(key: string): void {
    this.cache.delete(this.prefix + key);
  }
}

/** A policy: one cache entry per key holding every rule's state, decided all-or-nothing. */
class PolicyBinding implements BoundStore {
  readonly #setOptions = { ttl: 0 };
  constructor(
    private readonly cache: LRUCache<string, object>,
    private readonly clock: Clock,
    private readonly rules: readonly Algorithm[],
    private readonly prefix: string,
  ) {}

  consume(key: string, permits: number): Decision {
    const k = this.prefix + key;
    const p = decidePolicy(this.rules, this.cache.get(k) as unknown[] | undefined, this.clock.now(), permits);
    if (p.states !== undefined) {
      this.#setOptions.ttl = cacheTtl(p.ttlMs);
      this.cache.set(k, p.states, this.#setOptions);
    }
    return p.decision;
  }

  peek(key: string): Decision {
    const p = decidePolicy(this.rules, this.cache.get(this.prefix + key) as unknown[] | undefined, this.clock.now(), 1);
    const d = p.decision;
    return d.allowed ? { ...d, remaining: d.remaining + 1, rules: d.rules?.map((r) => ({ ...r, remaining: r.remaining + 1 })) } : d;
  }

  reset(key: string): void {
    this.cache.delete(this.prefix + key);
  }
}

/** Creates an in-process store; see {@link MemoryStoreOptions}. */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options);
}
