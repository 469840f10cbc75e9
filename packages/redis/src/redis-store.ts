import { randomUUID } from 'node:crypto';
import { type Clock, SluiceError, SluiceRangeError, type Store } from '@sluice/core';
import {
  type BoundStore,
  type AccessListBinding,
  type AccessListStore,
  type LimitedKeysBinding,
  type LimitedKeysStore,
  type RuleSet,
  type FleetEvent,
  type ResetHeardEvent,
  type FleetShare,
  parseOptions,
  type DecisionEvent,
  type Fallback,
  type FailMode,
  type NodeIdentity,
  type EngineHealth,
  type StoreEvents,
  type FailModeOptions,
  type ConcurrencyStore,
  type PauseBinding,
  type PauseStore,
  type SemaphoreBinding,
  type SemaphoreSpec,
  type FleetPresence,
  ExactStore,
  emitSafely,
  hostParts,
  identityOf,
} from '@sluice/core/internal';
import { checkClient, warnCrossSlot } from './config-checks.js';
import { ChannelListener } from './connection/channel-listener.js';
import type { RedisConnection } from './connection/connection.js';
import { IoredisConnection } from './connection/ioredis.js';
import { BanMarkers } from './exact/ban-markers.js';
import { RedisPresence } from './fleet/presence.js';
import { redisHealthProbe } from './health-probe.js';
import { checkStateIds, decodeIdentity, freedChannel, pauseChannel, stateKey } from './key-layout.js';
import { engineOnConnection } from './engine/redis-engine.js';
import { DEFAULT_CLIENT_SKEW_MS, REDIS_STORE_OPTIONS, type RedisBackedOptions } from './options.js';
import { StartupChecks } from './preflight.js';
import { StoreEmitter } from './store-events.js';
import { RedisAccessLists } from './access-lists.js';
import { writeDescriptor } from './descriptor.js';
import { RedisBoards } from './limited-keys-board.js';
import { RedisPauses } from './pauses.js';
import { exactScripts, pauseScript, presenceScript, semaphoreScript } from './scripts.js';
import { RedisSemaphore } from './semaphore.js';
import type { RedisClient } from './connection/connect.js';

/**
 * Options of `redisStore`: those of every Redis-backed store (RedisBackedOptions, FailModeOptions) and its own
 * (see docs/options.md for every option and default).
 */
export interface RedisStoreOptions extends RedisBackedOptions, FailModeOptions {
  /**
   * With `clock: 'client'`: the furthest a decision time may be from Redis TIME. A node whose clock runs
   * ahead would otherwise take tokens early and push the stored time ahead, starving the others for as
   * long as its clock is ahead; its times are clamped to Redis TIME +- this. (A Clock object passed as
   * `clock` is a test or simulation clock and is never clamped unless this is set.)
   * @default 1000 with 'client', none with a Clock
   */
  maxClockSkewMs?: number | undefined;
  /**
   * Answer a hot key's single-permit denials locally until they can change (see DenyCache), and drop them
   * on every node when a key is reset, unblocked or refunded (Redis pub/sub, one extra connection per store).
   * @default true
   */
  denyCache?: boolean | undefined;
  /**
   * The most decisions one script call carries. Larger batches amortize the call; smaller ones let several
   * calls travel pipelined, so the client and Redis work at the same time (measured best here: 32-64).
   * @default 64
   */
  maxBatch?: number | undefined;
  /**
   * Called with every decision, where it came from, and the time it was made (for metrics and tests).
   * Left undefined it costs nothing.
   */
  onDecision?: ((event: DecisionEvent) => void) | undefined;
}

/**
 * Events of a RedisStore: those of every Redis-backed store (StoreEvents: Redis failing and answering again, a
 * configuration learned, an outage's grants charged, a callback of yours that threw) and exact mode's own.
 */
export interface RedisStoreEvents extends StoreEvents {
  /** failMode 'local': the live nodes of a limiter's fleet changed (its fail mode now holds 1 / nodes). */
  fleet: [FleetEvent];
  /**
   * A reset, unblock or refund of `key` was heard (pub/sub, from any node, this one included): the deny caches
   * here dropped it.
   */
  'reset-heard': [ResetHeardEvent];
}

/** A share that never moves: what 'open' and 'closed' (which keep nothing) are bound with. */
const WHOLE: FleetShare = { fraction: 1 };

/**
 * Exact central limiting on Redis: every decision is the core algorithm's function, run atomically by one
 * Lua script on the server. Plug it into createLimiter: switching a limiter from memory to Redis is the
 * `store` line. Assembled from parts: per limiter an ExactBinding (deny cache, health gate, transport,
 * controls), one health machine, one fail mode, one presence in the fleet, one start-up check.
 *
 * @example
 * const store = redisStore({ redis: new Redis(process.env.REDIS_URL) })
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }), store })
 */
export class RedisStore
  extends StoreEmitter<RedisStoreEvents>
  implements Store, ConcurrencyStore, PauseStore, LimitedKeysStore, AccessListStore
{
  readonly redis: RedisClient;
  /** Defined in client-clock mode: limiters wait on the clock decisions are made with. */
  readonly clock: Clock | undefined;
  readonly timeoutMs: number;
  readonly failMode: FailMode;
  readonly maxBatch: number;
  readonly #identity: NodeIdentity;
  readonly #localClock: Clock;
  readonly #maxClockSkewMs: number | undefined;
  /** Exact mode over the engine (core's assembly): per prefix its bindings, deny caches and channel. */
  readonly #exact: ExactStore;
  /** Concurrency limiters' slots, by prefix. */
  readonly #semaphores = new Map<string, Set<RedisSemaphore>>();
  /** The throttles' pauses bound here, by prefix: each hears the prefix's channel. */
  readonly #pauses = new Map<string, Set<RedisPauses>>();
  readonly #boards: RedisBoards;
  readonly #lists: RedisAccessLists;
  /** Messages from other nodes (resets, freed slots, configuration changes), on a connection of the store's own. */
  readonly #channels: ChannelListener;
  readonly #connection: RedisConnection;
  readonly #health: EngineHealth;
  readonly #checks: StartupChecks;
  readonly #fallback: Fallback;
  /** failMode 'local': how many nodes share each limiter's limits. */
  readonly #presence: FleetPresence | undefined;
  #closed = false;

  constructor(options: RedisStoreOptions) {
    super();
    const o = parseOptions('redisStore options', REDIS_STORE_OPTIONS, options, true);
    const connection = o.redis;
    // The parts every store over an engine has (core's), on this connection's probe and presence.
    const parts = hostParts(
      { health: redisHealthProbe(connection), presence: (fleet) => new RedisPresence({ ...fleet, connection }) },
      o,
      this,
      randomUUID,
      (healthy) => {
        // Callers waiting for a slot try again: on Redis, or by the fail mode.
        for (const set of this.#semaphores.values()) for (const s of set) s.healthChanged();
        // What the fail mode granted meanwhile counts on Redis from now on.
        if (healthy) this.#exact.recovered();
      },
    );
    this.redis = options.redis;
    this.#connection = connection;
    this.#channels = new ChannelListener(connection, o.timeoutMs);
    if (connection instanceof IoredisConnection) checkClient(connection.client, connection.isCluster);
    this.clock = parts.decisionClock;
    this.#localClock = parts.localClock;
    this.#identity = parts.identity;
    this.#health = parts.health;
    this.#checks = new StartupChecks(connection, o.timeoutMs, (error) => emitSafely(this, 'store-error', error));
    this.#boards = new RedisBoards({ connection, timeoutMs: o.timeoutMs }, this.#checks);
    this.#lists = new RedisAccessLists({
      connection,
      timeoutMs: o.timeoutMs,
      checks: this.#checks,
      channels: this.#channels,
    });
    this.#fallback = parts.fallback;
    this.#presence = parts.presence;
    this.timeoutMs = o.timeoutMs;
    this.failMode = o.failMode;
    this.maxBatch = o.maxBatch;
    if (o.maxClockSkewMs !== undefined && o.clock === 'server') {
      throw new SluiceRangeError(
        'maxClockSkewMs',
        o.maxClockSkewMs,
        "maxClockSkewMs bounds client clocks: it needs clock 'client' or a Clock",
      );
    }
    this.#maxClockSkewMs = o.maxClockSkewMs ?? (o.clock === 'client' ? DEFAULT_CLIENT_SKEW_MS : undefined);
    // Decisions wait for Redis as long as the binding's own deadline (timeoutMs) and its late answers; the
    // engine's channels are heard on the store's subscriber.
    const engine = engineOnConnection(connection, undefined, {
      maxBatch: o.maxBatch,
      maxClockSkewMs: this.#maxClockSkewMs,
      channels: this.#channels,
    });
    const presence = parts.presence;
    this.#exact = new ExactStore({
      engine,
      events: this,
      timeoutMs: o.timeoutMs,
      maxKeys: o.maxKeys,
      denyCache: o.denyCache,
      decisionClock: parts.decisionClock,
      localClock: parts.localClock,
      health: parts.health,
      fallback: parts.fallback,
      failMode: o.failMode,
      onDecision: o.onDecision,
      // A failure about a key is probed in its slot.
      probeKey: (prefix, rule, state, key) => stateKey(prefix, identityOf(rule, key), state),
      banHint: (prefix) => new BanMarkers(connection, prefix, o.timeoutMs, parts.localClock),
      // Each prefix's start-up check, and its place in the fleet.
      holdPrefix: (ruleSet) => {
        const { prefix } = ruleSet;
        const scripts = exactScripts((ruleSet.plans ?? ruleSet.rules).map((rule) => rule.kind));
        this.#checks.add(prefix, presence === undefined ? scripts : [...scripts, presenceScript()]);
        const fleet = presence?.track(prefix);
        return {
          share: fleet?.share,
          release: () => {
            this.#checks.remove(prefix);
            fleet?.release();
          },
        };
      },
      checkRules: (rules, key) => {
        // A change of the limiter's rules (an override's key keeps its own slot).
        if (key === undefined && this.#connection.isCluster && rules.some((rule) => rule.scope !== undefined))
          throw new SluiceError(
            'UNSUPPORTED',
            'a policy with rules counted against other keys is decided slot by slot on a Redis Cluster, where a ' +
              'change of its rules cannot be made atomic with its decisions: close the limiter and create it with ' +
              'the new rules',
          );
      },
    });
  }

  /** This node's name in its limiters' fleets: the nodeId given, or a new one if another live process had it. */
  get nodeId(): string {
    return this.#identity.id;
  }

  /**
   * Resolves once the start-up check of every limiter bound to this store so far has passed: each runs, on
   * its first bind, the commands the store's scripts run on keys under the limiter's prefix. Rejects with
   * SluiceError 'STORE_MISCONFIGURED' naming what is wrong (a permission the Redis user lacks, a standalone
   * client given for a Cluster or the reverse; also reported as 'store-error' and a process warning when
   * found, whether or not anyone awaits this), or 'STORE_UNAVAILABLE' when Redis did not answer (checked
   * again by the next call). Once it resolves, this store hears resets from every node (its channels are
   * subscribed). Decisions never wait for it. `limiter.ready()` waits for it too.
   *
   * @example
   * const limiter = createLimiter({ rules, store })
   * await store.ready() // at start-up: fail fast on a bad ACL or the wrong client
   */
  async ready(): Promise<void> {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    await this.#checks.ready();
    // From here, a reset or unblock on any node is heard here (the deny cache's channel is subscribed).
    await this.#channels.subscribed();
    // Each limiter decides under its configuration as stored (limiter.reconfigure on another node).
    await this.#exact.ready();
  }

  /** False from a failed call until Redis answers again. */
  get healthy(): boolean {
    return this.#health.healthy;
  }

  /** True while the fail mode decides because Redis is away (`sluice.store.degraded` in metrics). */
  get degraded(): boolean {
    return !this.#health.healthy;
  }

  /** failMode 'local': the live nodes of `prefix`'s fleet at the latest answered heartbeat, or undefined. */
  fleetSize(prefix: string): number | undefined {
    return this.#presence?.nodes(prefix);
  }

  /** Binds a limiter's rules under its prefix (see Store.bind) and starts its start-up check. */
  bind(ruleSet: RuleSet): BoundStore {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    const keyed = ruleSet.rules.length > 1 && ruleSet.rules.some((rule) => rule.scope !== undefined);
    const unrefundable = ruleSet.rules.find((rule) => !rule.refundable);
    const isCluster = this.#connection.isCluster;
    if (isCluster && keyed && unrefundable !== undefined) {
      // Such a policy may span slots, decided slot by slot with refunds; Guava's prepay cannot be refunded.
      throw new SluiceRangeError(
        'rules',
        unrefundable.name,
        `rule ${JSON.stringify(unrefundable.name)} (${unrefundable.kind}) cannot be in a policy with rules ` +
          `counted against other keys on a Redis Cluster: its grants cannot be refunded`,
      );
    }
    const { prefix } = ruleSet;
    checkStateIds(prefix, ruleSet.plans ?? ruleSet.rules);
    const bound = this.#exact.bind(ruleSet);
    if (isCluster && keyed) warnCrossSlot(prefix);
    if (ruleSet.plans === undefined) void writeDescriptor(this.#connection, prefix, 'exact', ruleSet.rules);
    return bound;
  }

  /**
   * Stops probing, heartbeating (leaving the fleets, one last call within timeoutMs), listening for resets
   * and listening to your client. The Redis client passed in stays open (it is yours); limiters still bound
   * to this store decide by its fail mode from now on.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#health.close();
    await this.#presence?.close(this.timeoutMs);
    await this.#exact.close();
    await this.#channels.close();
  }

  /**
   * A concurrencyLimiter's slots on Redis, shared by every process with this prefix: see RedisSemaphore.
   * Waiters hear of releases on the store's subscriber. `leaseMs` must leave room for a renewal to reach
   * Redis: at least 4 x timeoutMs. With failMode 'local', this node's share of the slots (1 / the live nodes
   * of the prefix's fleet, its holders on Redis among them) is counted here while Redis is away.
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
    const fleet = this.#presence?.track(prefix);
    let set = this.#semaphores.get(prefix);
    const channel = freedChannel(prefix);
    let hearsReleases = this.#channels.hears;
    if (set === undefined) {
      this.#semaphores.set(prefix, (set = new Set()));
      hearsReleases = this.#channels.listen(channel, (key) => {
        for (const s of this.#semaphores.get(prefix) ?? []) s.freed(decodeIdentity(key));
      });
      const scripts = this.#presence === undefined ? [semaphoreScript()] : [semaphoreScript(), presenceScript()];
      this.#checks.add(prefix, scripts, `${prefix} slots`);
    }
    const semaphores = set;
    const semaphore: RedisSemaphore = new RedisSemaphore(
      {
        connection: this.#connection,
        decisionClock: this.clock,
        timeoutMs: this.timeoutMs,
        failMode: this.failMode,
        local: this.#fallback.bindSemaphore(spec, fleet?.share ?? WHOLE),
        hearsReleases,
        health: this.#health,
      },
      spec,
      () => {
        fleet?.release();
        semaphores.delete(semaphore);
        if (semaphores.size > 0) return;
        this.#semaphores.delete(prefix);
        this.#checks.remove(`${prefix} slots`);
        this.#channels.stop(channel);
      },
    );
    semaphores.add(semaphore);
    return semaphore;
  }

  /**
   * A throttle's pauses on Redis, shared by every process with this prefix: see RedisPauses. The nodes hear
   * each other's pauses on the store's subscriber; while Redis is away, the pauses this node knows hold.
   */
  /** A limiter's allow and deny lists on Redis, held by every process with this prefix: see RedisAccessLists. */
  bindAccessList(prefix: string): AccessListBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    return this.#lists.bind(prefix);
  }

  /** A limiter's limited-keys board on Redis, shared by every process with this prefix: see RedisBoards. */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    return this.#boards.bind(prefix);
  }

  bindPause(prefix: string): PauseBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'redisStore: this store is closed');
    let set = this.#pauses.get(prefix);
    const channel = pauseChannel(prefix);
    if (set === undefined) {
      this.#pauses.set(prefix, (set = new Set()));
      this.#channels.listen(channel, (message) => {
        for (const p of this.#pauses.get(prefix) ?? []) p.heard(message);
      });
      this.#checks.add(prefix, [pauseScript()], `${prefix} pauses`);
    }
    const bound = set;
    const pauses: RedisPauses = new RedisPauses(
      { connection: this.#connection, timeoutMs: this.timeoutMs, health: this.#health, localClock: this.#localClock },
      prefix,
      () => {
        bound.delete(pauses);
        if (bound.size > 0) return;
        this.#pauses.delete(prefix);
        this.#checks.remove(`${prefix} pauses`);
        this.#channels.stop(channel);
      },
    );
    bound.add(pauses);
    return pauses;
  }
}
