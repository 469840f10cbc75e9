import {
  type BoundStore,
  type Clock,
  type Decision,
  MemoryStore,
  PrefixGuard,
  type RuleSet,
  SluiceRangeError,
  SluiceTypeError,
  type Store,
  describeValue,
  optionsObject,
  positiveFinite,
  positiveInteger,
  systemClock,
} from '@sluice/core';
import { EventEmitter } from 'eventemitter3';
import { Cluster } from 'ioredis';
import { checkClient, warnCrossSlot } from './config-checks.js';
import { DenyCache } from './deny-cache.js';
import { resetChannel } from './key-layout.js';
import { reconnectNow } from './reconnect.js';
import { type BindingContext, RedisBinding } from './redis-binding.js';
import type { RedisClient } from './script-runner.js';
import { refundable } from './scripts.js';

/** How often a failing store lets one batch try Redis again. */
const PROBE_INTERVAL_MS = 100;

/** What a store does when Redis does not answer within `timeoutMs`, or answers with an error. */
export type FailMode = 'local' | 'open' | 'closed';

export interface RedisStoreOptions {
  /** An ioredis client: `new Redis(...)` or `new Cluster(...)`. The store never closes it. */
  redis: RedisClient;
  /**
   * Where decision time comes from. `'server'`: Redis TIME, one clock for the whole fleet. `'client'`:
   * this process's monotonic clock; or pass a Clock (a ManualClock in tests) to decide on it.
   * @default 'server'
   */
  clock?: 'server' | 'client' | Clock;
  /**
   * Longest a decision waits for Redis before the fail mode decides it instead.
   * @default 50
   */
  timeoutMs?: number;
  /**
   * `'local'`: decide from an in-memory limiter with the same rules on this node; `'open'`: allow;
   * `'closed'`: deny (retry after timeoutMs).
   * @default 'local'
   */
  failMode?: FailMode;
  /**
   * Answer a hot key's single-permit denials locally until they can change (see DenyCache), and drop them
   * on every node when a key is reset (Redis pub/sub, one extra connection per store).
   * @default true
   */
  denyCache?: boolean;
  /**
   * Most keys the deny cache remembers per limiter.
   * @default 10_000
   */
  denyCacheMaxKeys?: number;
  /**
   * The most decisions one script call carries. Larger batches amortize the call; smaller ones let several
   * calls travel pipelined, so the client and Redis work at the same time (measured best here: 32-64).
   * @default 64
   */
  maxBatch?: number;
  /**
   * Called with every decision, where it came from, and the time it was made (for metrics and tests).
   * Left undefined it costs nothing.
   */
  onDecision?: (event: DecisionEvent) => void;
}

/** One decision, as `onDecision` sees it. */
export interface DecisionEvent {
  readonly prefix: string;
  readonly key: string;
  readonly decision: Decision;
  /** 'redis': the script decided; 'cache': the deny cache; 'fallback': the fail mode. */
  readonly source: 'redis' | 'cache' | 'fallback';
  /** The decision time: Redis TIME or the client clock for 'redis', this process's clock otherwise. */
  readonly decidedAtMs: number;
  /**
   * For a policy decided slot by slot (rules in different Cluster slots): the time each rule's slot decided
   * at, in rule order (NaN for a rule not reached). `decidedAtMs` is the latest of them.
   */
  readonly ruleDecidedAtMs?: readonly number[];
}

/** Events of a RedisStore: emitted when Redis starts failing and when it answers again. */
export interface RedisStoreEvents {
  'store-error': [error: Error];
  'store-recovered': [];
}

const FAIL_MODES: readonly FailMode[] = ['local', 'open', 'closed'];

function isClient(value: unknown): value is RedisClient {
  return typeof value === 'object' && value !== null && typeof (value as RedisClient).evalsha === 'function';
}

/**
 * Exact central limiting on Redis: every decision is the core algorithm's function, run atomically by one
 * Lua script on the server. Plug it into createLimiter: switching a limiter from memory to Redis is the
 * `store` line.
 *
 * @example
 * const store = redisStore({ redis: new Redis(process.env.REDIS_URL) })
 * const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 100, refillPerSecond: 10 }), store })
 */
export class RedisStore extends EventEmitter<RedisStoreEvents> implements Store {
  readonly redis: RedisClient;
  /** Defined in client-clock mode: limiters wait on the clock decisions are made with. */
  readonly clock: Clock | undefined;
  readonly timeoutMs: number;
  readonly failMode: FailMode;
  readonly maxBatch: number;
  readonly #localClock: Clock;
  readonly #denyCache: boolean;
  readonly #denyCacheMaxKeys: number;
  readonly #bindings = new Map<string, Set<RedisBinding>>();
  readonly #prefixes = new PrefixGuard();
  #subscriber: RedisClient | undefined;
  #healthy = true;
  #probing = false;
  #nextProbeAt = 0;
  #closed = false;

  constructor(options: RedisStoreOptions) {
    super();
    optionsObject('redisStore options', options, true);
    if (!isClient(options.redis)) {
      throw new SluiceTypeError('redis', options.redis, `redis must be an ioredis Redis or Cluster client, got ${describeValue(options.redis)}`);
    }
    this.redis = options.redis;
    checkClient(this.redis, this.redis instanceof Cluster);
    const clock = options.clock ?? 'server';
    if (clock === 'server') this.clock = undefined;
    else if (clock === 'client') this.clock = systemClock;
    else if (typeof clock === 'object' && clock !== null && typeof clock.now === 'function') this.clock = clock;
    else throw new SluiceRangeError('clock', clock, `clock must be 'server', 'client' or a Clock, got ${describeValue(clock)}`);
    this.#localClock = this.clock ?? systemClock;
    if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
      throw new SluiceTypeError('onDecision', options.onDecision, `onDecision must be a function, got ${describeValue(options.onDecision)}`);
    }
    this.timeoutMs = options.timeoutMs === undefined ? 50 : positiveFinite('timeoutMs', options.timeoutMs);
    const failMode = options.failMode ?? 'local';
    if (!FAIL_MODES.includes(failMode)) {
      throw new SluiceRangeError('failMode', failMode, `failMode must be 'local', 'open' or 'closed', got ${describeValue(failMode)}`);
    }
    this.failMode = failMode;
    if (options.denyCache !== undefined && typeof options.denyCache !== 'boolean') {
      throw new SluiceTypeError('denyCache', options.denyCache, `denyCache must be a boolean, got ${describeValue(options.denyCache)}`);
    }
    this.#denyCache = options.denyCache ?? true;
    this.#denyCacheMaxKeys = options.denyCacheMaxKeys === undefined ? 10_000 : positiveInteger('denyCacheMaxKeys', options.denyCacheMaxKeys);
    this.maxBatch = options.maxBatch === undefined ? 64 : positiveInteger('maxBatch', options.maxBatch);
    this.#context = {
      redis: this.redis,
      isCluster: this.redis instanceof Cluster,
      decisionClock: this.clock,
      localClock: this.#localClock,
      timeoutMs: this.timeoutMs,
      failMode: this.failMode,
      maxBatch: this.maxBatch,
      onDecision: options.onDecision,
      mayCallRedis: () => this.#mayCallRedis(),
      reportSuccess: () => this.#reportSuccess(),
      reportFailure: (error) => this.#reportFailure(error),
    };
  }

  readonly #context: BindingContext;

  /** False from a failed call until Redis answers again. */
  get healthy(): boolean {
    return this.#healthy;
  }

  bind(ruleSet: RuleSet): BoundStore {
    if (this.#closed) throw new SluiceRangeError('store', 'redisStore', 'this redisStore is closed');
    const keyed = ruleSet.rules.length > 1 && ruleSet.rules.some((rule) => rule.key !== undefined);
    const unrefundable = ruleSet.rules.find((rule) => !refundable(rule.kind));
    if (this.redis instanceof Cluster && keyed && unrefundable !== undefined) {
      // Such a policy may span slots, decided slot by slot with refunds; Guava's prepay cannot be refunded.
      throw new SluiceRangeError(
        'algorithm',
        unrefundable.name,
        `rule ${JSON.stringify(unrefundable.name)} (${unrefundable.kind}) cannot be in a policy with rules counted against other keys on a Redis Cluster: its grants cannot be refunded`,
      );
    }
    this.#prefixes.claim(ruleSet.prefix, ruleSet.rules);
    if (this.redis instanceof Cluster && keyed) warnCrossSlot(this.redis, ruleSet.prefix);
    const local = this.failMode === 'local' ? new MemoryStore({ clock: this.#localClock }).bind(ruleSet, true) : undefined;
    const binding = new RedisBinding(
      this.#context,
      ruleSet.rules,
      ruleSet.prefix,
      this.#denyCache ? new DenyCache(this.#denyCacheMaxKeys) : undefined,
      local,
    );
    let set = this.#bindings.get(ruleSet.prefix);
    if (set === undefined) {
      set = new Set();
      this.#bindings.set(ruleSet.prefix, set);
      if (this.#denyCache) this.#subscribe(ruleSet.prefix);
    }
    set.add(binding);
    const forget = binding.reset.bind(binding);
    // A reset also tells the other nodes to drop the key from their deny caches.
    binding.reset = async (key: string) => {
      await forget(key);
      if (this.#denyCache) await this.redis.publish(resetChannel(ruleSet.prefix), key);
    };
    return binding;
  }

  /** Stops listening for resets; the Redis client passed in stays open (it is the caller's). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    subscriber?.disconnect();
  }

  #subscribe(prefix: string): void {
    let subscriber = this.#subscriber;
    if (subscriber === undefined) {
      // A subscribed connection can do nothing else, so resets are heard on a duplicate of the client.
      subscriber = this.redis instanceof Cluster ? this.redis.duplicate() : this.redis.duplicate();
      subscriber.on('error', (error: Error) => this.#reportFailure(error));
      subscriber.on('message', (channel: string, key: string) => {
        for (const [p, bindings] of this.#bindings) if (resetChannel(p) === channel) for (const b of bindings) b.forget(key);
      });
      this.#subscriber = subscriber;
    }
    void subscriber.subscribe(resetChannel(prefix)).catch((error: unknown) => this.#reportFailure(error));
  }

  /**
   * While Redis is failing, batches are decided by the fail mode at once instead of each waiting timeoutMs,
   * and nothing piles up in the client's offline queue; one batch at a time goes as a probe, every
   * PROBE_INTERVAL_MS, and the first that succeeds returns the store to Redis.
   */
  #mayCallRedis(): boolean {
    if (this.#healthy) return true;
    // Outages are wall-clock events: a client ManualClock must not hold the store in its fallback.
    const now = systemClock.now();
    if (this.#probing || now < this.#nextProbeAt) return false;
    this.#probing = true;
    reconnectNow(this.redis);
    return true;
  }

  #reportSuccess = (): void => {
    this.#probing = false;
    if (!this.#healthy) {
      this.#healthy = true;
      this.emit('store-recovered');
    }
  };

  /** Events fire on the change from healthy to failing and back, not once per failed call. */
  #reportFailure = (error: unknown): void => {
    this.#probing = false;
    this.#nextProbeAt = systemClock.now() + PROBE_INTERVAL_MS;
    if (this.#healthy) {
      this.#healthy = false;
      this.emit('store-error', error instanceof Error ? error : new Error(String(error)));
    }
  };
}
