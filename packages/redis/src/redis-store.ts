import { DEFAULT_TIMEOUT_MS } from './deadline.js';
import {
  type BoundStore,
  type Clock,
  type ConcurrencyStore,
  type Decision,
  type DecisionSource,
  MemoryStore,
  type RuleSet,
  type SemaphoreBinding,
  type SemaphoreSpec,
  SluiceError,
  SluiceRangeError,
  SluiceTypeError,
  type Store,
  systemClock,
} from '@sluice/core';
import {
  PrefixGuard,
  callSafely,
  describeValue,
  emitSafely,
  optionsObject,
  positiveFinite,
  positiveInteger,
  scaledRule,
  timerDuration,
} from '@sluice/core/store-kit';
import { EventEmitter } from 'eventemitter3';
import { checkClient, warnCrossSlot } from './config-checks.js';
import { DenyCache } from './deny-cache.js';
import { type FailMode, failModeOption } from './fail-mode.js';
import { toConnection } from './connection/connect.js';
import type { RedisConnection, ResetSubscriber } from './connection/connection.js';
import { IoredisConnection } from './connection/ioredis.js';
import { RedisHealth } from './health.js';
import { StartupChecks } from './preflight.js';
import { adjustScript, blockScript, decideOneScript, decideScript, semaphoreScript } from './scripts.js';
import { decodeIdentity, encodeIdentity, freedChannel, resetChannel } from './key-layout.js';
import { RedisSemaphore } from './semaphore.js';
import { type BindingContext, RedisBinding } from './redis-binding.js';
import type { RedisClient } from './connection/connect.js';

/** Options of `redisStore`. */
export interface RedisStoreOptions {
  /**
   * Your Redis client, as you have it: ioredis 5/6 (`new Redis()`, `new Cluster()`), iovalkey, node-redis 5/6
   * (`createClient()`, `createCluster()`, connected) or Valkey GLIDE 2 (`GlideClient`, `GlideClusterClient`).
   * The store never closes it.
   */
  redis: RedisClient;
  /**
   * Where decision time comes from. `'server'`: Redis TIME, one clock for the whole fleet. `'client'`:
   * this process's monotonic clock; or pass a Clock (a ManualClock in tests) to decide on it.
   * @default 'server'
   */
  clock?: 'server' | 'client' | Clock;
  /**
   * Longest a decision waits for Redis before the fail mode decides it instead.
   * @default DEFAULT_TIMEOUT_MS (50)
   */
  timeoutMs?: number;
  /**
   * `'local'`: decide from an in-memory limiter holding this node's share of each rule (see
   * `expectedNodes`); `'open'`: allow; `'closed'`: deny (retry after timeoutMs).
   * @default 'local'
   */
  failMode?: FailMode;
  /**
   * How many nodes share this store's limits, for `failMode: 'local'`: while Redis is away each node
   * enforces 1 / expectedNodes of every rule (counts rounded down, at least 1), so the fleet stays near the
   * limit. Left at 1, each node enforces the whole limit on its own: N nodes may admit up to N x the limit
   * during an outage.
   * @default 1
   */
  expectedNodes?: number;
  /**
   * With `clock: 'client'`: the furthest a decision time may be from Redis TIME. A node whose clock runs
   * ahead would otherwise take tokens early and push the stored time ahead, starving the others for as
   * long as its clock is ahead; its times are clamped to Redis TIME +- this. (A Clock object passed as
   * `clock` is a test or simulation clock and is never clamped unless this is set.)
   * @default 1000 with 'client', none with a Clock
   */
  maxClockSkewMs?: number;
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
  /** 'redis': the script decided; 'deny_cache': the deny cache; 'fallback': the fail mode (the names metrics use). */
  readonly source: Extract<DecisionSource, 'redis' | 'deny_cache' | 'fallback'>;
  /** The decision time: Redis TIME or the client clock for 'redis', this process's clock otherwise. */
  readonly decidedAtMs: number;
  /**
   * For a policy decided slot by slot (rules in different Cluster slots): the time each rule's slot decided
   * at, in rule order (NaN for a rule not reached). `decidedAtMs` is the latest of them.
   */
  readonly ruleDecidedAtMs?: readonly number[];
}

/**
 * Events of a RedisStore: emitted when Redis starts failing and when it answers again, and when a callback
 * of yours threw (an `onDecision`, a listener of these events): the store went on, and the error is here.
 */
export interface RedisStoreEvents {
  'store-error': [error: Error];
  'store-recovered': [];
  'callback-error': [error: unknown, callback: string];
}

const DEFAULT_CLIENT_SKEW_MS = 1000;

/**
 * Exact central limiting on Redis: every decision is the core algorithm's function, run atomically by one
 * Lua script on the server. Plug it into createLimiter: switching a limiter from memory to Redis is the
 * `store` line.
 *
 * @example
 * const store = redisStore({ redis: new Redis(process.env.REDIS_URL) })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }), store })
 */
export class RedisStore extends EventEmitter<RedisStoreEvents> implements Store, ConcurrencyStore {
  readonly redis: RedisClient;
  /** Defined in client-clock mode: limiters wait on the clock decisions are made with. */
  readonly clock: Clock | undefined;
  readonly timeoutMs: number;
  readonly failMode: FailMode;
  readonly maxBatch: number;
  readonly expectedNodes: number;
  readonly #localClock: Clock;
  readonly #denyCache: boolean;
  readonly #denyCacheMaxKeys: number;
  readonly #bindings = new Map<string, Set<RedisBinding>>();
  /** failMode 'local': each prefix's in-memory limiter state, shared by the limiter's bindings (its plans). */
  readonly #fallbacks = new Map<string, MemoryStore>();
  /** Concurrency limiters' slots, by prefix. */
  readonly #semaphores = new Map<string, Set<RedisSemaphore>>();
  /** What the store's subscriber does with a message, by channel. */
  readonly #channels = new Map<string, (message: string) => void>();
  readonly #prefixes = new PrefixGuard();
  readonly #connection: RedisConnection;
  readonly #health: RedisHealth;
  readonly #context: BindingContext;
  readonly #checks: StartupChecks;
  #subscriber: ResetSubscriber | undefined;
  /** A state key where the last failure happened: the probe asks there (on a Cluster, that slot's master). */
  #probeKey = 'sluice-probe';
  #closed = false;

  constructor(options: RedisStoreOptions) {
    super();
    optionsObject('redisStore options', options, true);
    const connection = toConnection(options.redis);
    this.redis = options.redis;
    this.#connection = connection;
    if (connection instanceof IoredisConnection) checkClient(connection.client, connection.isCluster);
    const clock = options.clock ?? 'server';
    if (clock === 'server') this.clock = undefined;
    else if (clock === 'client') this.clock = systemClock;
    else if (typeof clock === 'object' && clock !== null && typeof clock.now === 'function') this.clock = clock;
    else
      throw new SluiceRangeError(
        'clock',
        clock,
        `clock must be 'server', 'client' or a Clock, got ${describeValue(clock)}`,
      );
    this.#localClock = this.clock ?? systemClock;
    const onDecision = options.onDecision;
    if (onDecision !== undefined && typeof onDecision !== 'function') {
      throw new SluiceTypeError(
        'onDecision',
        onDecision,
        `onDecision must be a function, got ${describeValue(onDecision)}`,
      );
    }
    this.timeoutMs =
      options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : timerDuration('timeoutMs', options.timeoutMs);
    this.failMode = failModeOption(options.failMode);
    this.expectedNodes =
      options.expectedNodes === undefined ? 1 : positiveInteger('expectedNodes', options.expectedNodes);
    if (options.denyCache !== undefined && typeof options.denyCache !== 'boolean') {
      throw new SluiceTypeError(
        'denyCache',
        options.denyCache,
        `denyCache must be a boolean, got ${describeValue(options.denyCache)}`,
      );
    }
    this.#denyCache = options.denyCache ?? true;
    this.#denyCacheMaxKeys =
      options.denyCacheMaxKeys === undefined ? 10_000 : positiveInteger('denyCacheMaxKeys', options.denyCacheMaxKeys);
    this.maxBatch = options.maxBatch === undefined ? 64 : positiveInteger('maxBatch', options.maxBatch);
    const maxClockSkewMs =
      options.maxClockSkewMs !== undefined
        ? positiveFinite('maxClockSkewMs', options.maxClockSkewMs)
        : clock === 'client'
          ? DEFAULT_CLIENT_SKEW_MS
          : undefined;
    if (maxClockSkewMs !== undefined && this.clock === undefined) {
      throw new SluiceRangeError(
        'maxClockSkewMs',
        maxClockSkewMs,
        "maxClockSkewMs bounds client clocks: it needs clock 'client' or a Clock",
      );
    }
    this.#health = new RedisHealth({
      connection,
      timeoutMs: this.timeoutMs,
      probe: () => connection.exists(this.#probeKey),
      onChange: (healthy, error) => {
        if (healthy) emitSafely(this, 'store-recovered');
        else emitSafely(this, 'store-error', error);
        // Callers waiting for a slot try again: on Redis, or by the fail mode.
        for (const set of this.#semaphores.values()) for (const s of set) s.healthChanged();
      },
    });
    this.#checks = new StartupChecks(connection, this.timeoutMs, (error) => emitSafely(this, 'store-error', error));
    this.#context = {
      connection,
      decisionClock: this.clock,
      localClock: this.#localClock,
      timeoutMs: this.timeoutMs,
      failMode: this.failMode,
      maxBatch: this.maxBatch,
      maxClockSkewMs,
      onDecision: onDecision === undefined ? undefined : (event) => callSafely(this, 'onDecision', onDecision, event),
      mayCallRedis: () => this.#health.healthy,
      reportSuccess: () => this.#health.reportSuccess(),
      reportFailure: (error, stateKey) => {
        if (stateKey !== undefined) this.#probeKey = stateKey;
        this.#health.reportFailure(error);
      },
    };
  }

  /**
   * Resolves once the start-up check of every limiter bound to this store so far has passed: each runs, on
   * its first bind, the commands the store's scripts run on keys under the limiter's prefix. Rejects with
   * SluiceError 'STORE_MISCONFIGURED' naming what is wrong (a permission the Redis user lacks, a standalone
   * client given for a Cluster or the reverse; also reported as 'store-error' and a process warning when
   * found, whether or not anyone awaits this), or 'STORE_UNAVAILABLE' when Redis did not answer (checked
   * again by the next call). Decisions never wait for it.
   *
   * @example
   * const limiter = createLimiter({ rules, store })
   * await store.ready() // at start-up: fail fast on a bad ACL or the wrong client
   */
  async ready(): Promise<void> {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    await this.#checks.ready();
  }

  /** False from a failed call until Redis answers again. */
  get healthy(): boolean {
    return this.#health.healthy;
  }

  /** True while the fail mode decides because Redis is away (`sluice.store.degraded` in metrics). */
  get degraded(): boolean {
    return !this.#health.healthy;
  }

  /** Binds a limiter's rules under its prefix (see Store.bind) and starts its start-up check. */
  bind(ruleSet: RuleSet): BoundStore {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    const keyed = ruleSet.rules.length > 1 && ruleSet.rules.some((rule) => rule.key !== undefined);
    const unrefundable = ruleSet.rules.find((rule) => !rule.refundable);
    const isCluster = this.#connection.isCluster;
    if (isCluster && keyed && unrefundable !== undefined) {
      // Such a policy may span slots, decided slot by slot with refunds; Guava's prepay cannot be refunded.
      throw new SluiceRangeError(
        'algorithm',
        unrefundable.name,
        `rule ${JSON.stringify(unrefundable.name)} (${unrefundable.kind}) cannot be in a policy with rules ` +
          `counted against other keys on a Redis Cluster: its grants cannot be refunded`,
      );
    }
    const { prefix } = ruleSet;
    // A limiter with plans claims its prefix for every plan's rules (they share state by name).
    const release = this.#prefixes.claim(prefix, ruleSet.plans ?? ruleSet.rules);
    if (isCluster && keyed) warnCrossSlot(prefix);
    // The fail mode's local limiter holds this node's share of each rule.
    const share = 1 / this.expectedNodes;
    // One per prefix: a limiter's plans (which share state by rule name) share it, as on Redis.
    let fallback = this.#fallbacks.get(prefix);
    if (this.failMode === 'local' && fallback === undefined)
      this.#fallbacks.set(prefix, (fallback = new MemoryStore({ clock: this.#localClock })));
    const local = fallback?.bind({
      rules: ruleSet.rules.map((rule) => scaledRule(rule, share)),
      prefix,
      ...(ruleSet.plans === undefined ? {} : { plans: ruleSet.plans }),
    });
    const publishReset = this.#denyCache
      ? (key: string) => this.#connection.publish(resetChannel(prefix), encodeIdentity(key))
      : undefined;
    const binding: RedisBinding = new RedisBinding(this.#context, ruleSet.rules, prefix, {
      denyCache: this.#denyCache ? new DenyCache(this.#denyCacheMaxKeys) : undefined,
      local,
      publishReset,
      forgetHere: (key) => {
        for (const b of this.#bindings.get(prefix) ?? []) b.forget(key);
      },
      unbind: () => {
        release();
        local?.unbind?.();
        this.#unbind(prefix, binding);
      },
    });
    let set = this.#bindings.get(prefix);
    if (set === undefined) {
      set = new Set();
      this.#bindings.set(prefix, set);
      const kinds = (ruleSet.plans ?? ruleSet.rules).map((rule) => rule.kind);
      this.#checks.add(prefix, [
        decideScript(kinds),
        ...kinds.map(decideOneScript),
        adjustScript(kinds),
        blockScript(),
      ]);
      if (this.#denyCache) this.#subscribe(prefix);
    }
    set.add(binding);
    return binding;
  }

  /** A closed limiter's binding: dropped with its caches and fail-mode state; its channel when it was the last. */
  #unbind(prefix: string, binding: RedisBinding): void {
    const set = this.#bindings.get(prefix);
    if (set === undefined || !set.delete(binding) || set.size > 0) return;
    this.#bindings.delete(prefix);
    this.#fallbacks.delete(prefix);
    this.#checks.remove(prefix);
    this.#stopListening(resetChannel(prefix));
  }

  /**
   * Stops probing, listening for resets and listening to your client. The Redis client passed in stays open
   * (it is yours); limiters still bound to this store decide by its fail mode from now on.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#health.close();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    await subscriber?.close().catch(() => undefined);
  }

  /**
   * Messages from other nodes (resets, freed slots) are heard on a connection of the store's own (a
   * subscribed one can do nothing else); `onMessage` handles `channel`'s. False when the client library
   * cannot make one.
   */
  #listen(channel: string, onMessage: (message: string) => void): boolean {
    this.#channels.set(channel, onMessage);
    this.#subscriber ??= this.#connection.subscriber((from, message) => this.#channels.get(from)?.(message));
    this.#subscriber?.subscribe(channel).catch(() => {
      // Subscribed again on reconnect by the client itself; a missed message is made up for by time
      // (a cached denial's retryAfterMs, a waiter's next try).
    });
    return this.#subscriber !== undefined;
  }

  #stopListening(channel: string): void {
    this.#channels.delete(channel);
    this.#subscriber?.unsubscribe(channel).catch(() => {
      // A subscriber that lost its connection has no subscription left to drop.
    });
  }

  #subscribe(prefix: string): void {
    this.#listen(resetChannel(prefix), (key) => {
      for (const b of this.#bindings.get(prefix) ?? []) b.forget(decodeIdentity(key));
    });
  }

  /**
   * A concurrencyLimiter's slots on Redis, shared by every process with this prefix: see RedisSemaphore.
   * Waiters hear of releases on the store's subscriber. `leaseMs` must leave room for a renewal to reach
   * Redis: at least 4 x timeoutMs.
   */
  bindSemaphore(spec: SemaphoreSpec): SemaphoreBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    if (spec.leaseMs < 4 * this.timeoutMs) {
      throw new SluiceRangeError(
        'leaseMs',
        spec.leaseMs,
        `leaseMs must leave room to renew a slot on Redis: at least 4 x the store's timeoutMs ` +
          `(${4 * this.timeoutMs} ms), got ${spec.leaseMs}`,
      );
    }
    const { prefix } = spec;
    // failMode 'local': this node's share of the slots while Redis is away, counted in memory.
    const local =
      this.failMode === 'local'
        ? new MemoryStore({ clock: this.#localClock }).bindSemaphore({
            ...spec,
            max: Math.max(1, Math.floor(spec.max / this.expectedNodes)),
          })
        : undefined;
    let set = this.#semaphores.get(prefix);
    const channel = freedChannel(prefix);
    let hearsReleases = this.#subscriber !== undefined;
    if (set === undefined) {
      this.#semaphores.set(prefix, (set = new Set()));
      hearsReleases = this.#listen(channel, (key) => {
        for (const s of this.#semaphores.get(prefix) ?? []) s.freed(decodeIdentity(key));
      });
      this.#checks.add(prefix, [semaphoreScript()], `${prefix} slots`);
    }
    const semaphores = set;
    const semaphore: RedisSemaphore = new RedisSemaphore(
      {
        connection: this.#connection,
        decisionClock: this.clock,
        timeoutMs: this.timeoutMs,
        failMode: this.failMode,
        local,
        hearsReleases,
        mayCallRedis: () => this.#health.healthy,
        reportSuccess: () => this.#health.reportSuccess(),
        reportFailure: (error, key) => {
          this.#probeKey = key;
          this.#health.reportFailure(error);
        },
      },
      spec,
      () => {
        semaphores.delete(semaphore);
        if (semaphores.size > 0) return;
        this.#semaphores.delete(prefix);
        this.#checks.remove(`${prefix} slots`);
        this.#stopListening(channel);
      },
    );
    semaphores.add(semaphore);
    return semaphore;
  }
}
