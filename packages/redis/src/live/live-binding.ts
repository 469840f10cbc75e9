import {
  type Algorithm,
  type BoundStore,
  type CarryMode,
  type Clock,
  type Decision,
  type GrantSource,
  type LimiterConfiguration,
  type SharedRules,
  SluiceError,
} from '@sluice/core';
import { type DecisionNote, identityOf, keyCache } from '@sluice/core/store-kit';
import calculateSlot from 'cluster-key-slot';
import type { RedisConnection } from '../connection/connection.js';
import { withDeadline } from '../deadline.js';
import { configKey, generationName, resetChannel, stateKey, versionKey } from '../key-layout.js';
import { versionError } from '../reply-errors.js';
import { carryKeyScript, configReadScript, configWriteScript, raiseVersionScript } from '../scripts.js';
import { numArg, ruleArgs } from '../exact/rule-args.js';
import {
  type LiveConfig,
  type LiveRule,
  decodeConfig,
  encodeConfig,
  firstConfig,
  nextConfig,
} from './config-record.js';

/** What an exact binding of one configuration can do, as LiveBinding uses it. */
export interface VersionBinding extends BoundStore {
  /** Drops the key from the binding's deny cache. */
  forget(key: string): void;
  settleFallback(): Promise<{ keys: number; permits: number; kept: number }>;
  unbind(): void;
}

/** What a LiveBinding is made of: where the configuration lives, and how a binding of one version is made. */
export interface LiveParts {
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** The rules the limiter was created with (version 1). */
  readonly rules: readonly Algorithm[];
  readonly timeoutMs: number;
  /** The most keys whose carry this node remembers having made (the store's maxKeys). */
  readonly maxKeys: number;
  /** The decision clock (undefined: Redis TIME) and this process's clock (carry windows). */
  readonly decisionClock: Clock | undefined;
  readonly localClock: Clock;
  /**
   * Makes the exact binding that decides under `config` (its rules; each rule's states under its
   * generation's name), whose stale answers go to `onStale`.
   */
  readonly bindVersion: (
    config: LiveConfig,
    onStale: (version: number) => Promise<BoundStore | undefined>,
  ) => VersionBinding;
  /** A configuration that could not be read or used: the store's 'store-error'. */
  readonly report: (error: Error) => void;
  /** A configuration is in force from now on (the store's 'reconfigured'). */
  readonly adopted: (configuration: LimiterConfiguration) => void;
  /** Releases what the store holds for the limiter. */
  readonly unbind: () => void;
}

/** How many slots' versions one reconfigure raises at once on a Cluster. */
const RAISE_CONCURRENCY = 512;
/**
 * The deadline of one round of raises on a Cluster: a change is rare and a round is 512 calls, the first of
 * which may load the script on each primary; a decision's deadline is far too short for it.
 */
const RAISE_DEADLINE_MS = 5_000;

/**
 * Exact mode with live limits: the limiter's configuration kept in Redis for every node of its prefix
 * (SharedRules). Decisions go to the exact binding of the version this node knows; a slot whose version is
 * newer answers stale, and the decision is asked again under the configuration read from Redis (a node that
 * cannot read it decides by the fail mode and says so through 'store-error'). A rule changed by a version
 * keeps its states under a name of that generation; while the change's carry window is open, a key's first
 * touch on this node carries its states from the earlier generations (carry_key.lua, atomic per key).
 * @example
 * const binding = new LiveBinding(parts) // parts: see LiveParts; redisStore builds them
 * await binding.reconfigure([tokenBucket({ name: 'api', capacity: 50, refillPerSecond: 5 })], 'used')
 */
export class LiveBinding implements BoundStore, SharedRules {
  readonly #parts: LiveParts;
  #config: LiveConfig;
  #configuration: LimiterConfiguration;
  #inner: VersionBinding;
  /** The read of the stored configuration under way (concurrent stale answers share it). */
  #reading: Promise<BoundStore | undefined> | undefined;
  /** Carries under way, by key (the keys this node carried under the current version: #remembered). */
  #carrying = new Map<string, Promise<void>>();
  /** Until when a rule of the current version carries (0: none does). */
  #carryUntil = 0;
  readonly #remembered: ReturnType<typeof keyCache<string, true>>;
  #bound = true;

  constructor(parts: LiveParts) {
    this.#parts = parts;
    this.#config = firstConfig(parts.rules);
    this.#configuration = { version: 1, rules: parts.rules };
    this.#remembered = keyCache<string, true>(parts.maxKeys);
    this.#inner = parts.bindVersion(this.#config, this.#onStale);
  }

  get configuration(): LimiterConfiguration {
    return this.#configuration;
  }

  /**
   * Reads the stored configuration now and decides under it (the store's ready(): `limiter.rules` then
   * says what is in force). Rejects when it cannot be read or is of a later format.
   */
  async refresh(): Promise<void> {
    const config = await this.#read();
    if (config !== undefined) this.#adopt(config);
  }

  /**
   * Another node changed the configuration (its message on the limiter's reset channel): decide under the
   * stored one from now on, with a deny cache of its own (denials cached before may not hold under it).
   */
  heard(): void {
    this.refresh().catch((error: unknown) => this.#parts.report(asError(error)));
  }

  consume(key: string, permits: number, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    const carry = this.#carryFirst(key);
    if (carry === undefined) return this.#inner.consume(key, permits, maxWaitMs, note);
    return carry.then(() => this.#inner.consume(key, permits, maxWaitMs, note));
  }

  peek(key: string): Decision | Promise<Decision> {
    const carry = this.#carryFirst(key);
    if (carry === undefined) return this.#inner.peek(key);
    return carry.then(() => this.#inner.peek(key));
  }

  async reset(key: string): Promise<void> {
    // Carried first: a reset must not leave an earlier generation's states to be carried back.
    await this.#carryFirst(key);
    await this.#inner.reset(key);
  }

  async refund(key: string, permits: number, grantedAgoMs: number, grant?: GrantSource): Promise<void> {
    await this.#carryFirst(key);
    await this.#inner.refund?.(key, permits, grantedAgoMs, grant);
  }

  async penalize(key: string, permits: number): Promise<void> {
    await this.#carryFirst(key);
    await this.#inner.penalize?.(key, permits);
  }

  block(key: string, ms: number): void | Promise<void> {
    return this.#inner.block?.(key, ms);
  }

  unblock(key: string): void | Promise<void> {
    return this.#inner.unblock?.(key);
  }

  forget(key: string): void {
    this.#inner.forget(key);
  }

  settleFallback(): Promise<{ keys: number; permits: number; kept: number }> {
    return this.#inner.settleFallback();
  }

  unbind(): void {
    if (!this.#bound) return;
    this.#bound = false;
    this.#inner.unbind();
    this.#parts.unbind();
  }

  /**
   * Stores `rules` as the next version for every node (compare-and-set on the version read), raises the
   * version of every slot (so every node's next decision learns of it), and decides under it from now on.
   */
  async reconfigure(rules: readonly Algorithm[], carry: CarryMode): Promise<LimiterConfiguration> {
    const { connection, prefix, timeoutMs } = this.#parts;
    if (connection.isCluster && rules.some((rule) => rule.key !== undefined)) {
      throw new SluiceError(
        'UNSUPPORTED',
        'a policy with rules counted against other keys is decided slot by slot on a Redis Cluster, where a ' +
          'change of its rules cannot be made atomic with its decisions: close the limiter and create it with ' +
          'the new rules',
      );
    }
    const current = (await this.#read()) ?? this.#config;
    const version = current.version + 1;
    const next = nextConfig(current, rules, carry, version, this.#parts.localClock.now());
    const record = encodeConfig(next);
    try {
      await withDeadline(
        connection.runScript(configWriteScript(), [configKey(prefix)], [String(current.version), record]),
        timeoutMs,
        'a configuration write',
      );
    } catch (error) {
      const won = versionError(error, 'SLUICE_CONFLICT');
      if (won === undefined) throw storeUnavailable('the configuration could not be stored', error);
      throw new SluiceError(
        'CONFLICT',
        `another node changed the configuration first: version ${won} is in force (this change was made from ` +
          `version ${current.version}); nothing was changed`,
      );
    }
    await this.#raiseEverySlot(version);
    this.#adopt(next);
    // Nodes with a deny cache hear of it at once ('' is no key's message on the reset channel); the rest
    // learn of it from their next decision's slot.
    await withDeadline(connection.publish(resetChannel(prefix), ''), timeoutMs, 'a configuration message').catch(
      (error: unknown) => this.#parts.report(asError(error)),
    );
    return this.#configuration;
  }

  /** Raises the configuration version of the limiter's slot (standalone) or of every slot (Cluster). */
  async #raiseEverySlot(version: number): Promise<void> {
    const { connection, prefix, timeoutMs } = this.#parts;
    const raise = (slot: number | undefined) =>
      connection.runScript(raiseVersionScript(), [versionKey(prefix, slot)], [String(version)]);
    try {
      if (!connection.isCluster) {
        await withDeadline(raise(undefined), timeoutMs, 'a configuration version');
        return;
      }
      for (let first = 0; first < 16_384; first += RAISE_CONCURRENCY) {
        const slots = Array.from({ length: RAISE_CONCURRENCY }, (_, i) => first + i);
        await withDeadline(
          Promise.all(slots.map(raise)),
          Math.max(RAISE_DEADLINE_MS, timeoutMs * 4),
          'configuration versions',
        );
      }
    } catch (error) {
      // Stored, and raised in the slots a node already decided under it: the rest learn of it there.
      throw storeUnavailable(
        `version ${version} was stored, but not every slot could be told of it yet (nodes that decide there learn ` +
          'of it when a node of this version decides there, or when this call is made again)',
        error,
      );
    }
  }

  /** The stored configuration, or undefined when none is stored. Rejects when it cannot be read or used. */
  async #read(): Promise<LiveConfig | undefined> {
    const { connection, prefix, timeoutMs } = this.#parts;
    let reply: unknown;
    try {
      reply = await withDeadline(
        connection.runScript(configReadScript(), [configKey(prefix)], []),
        timeoutMs,
        'a configuration read',
      );
    } catch (error) {
      throw storeUnavailable('the configuration could not be read', error);
    }
    if (reply === null || reply === undefined) return undefined;
    return decodeConfig(Buffer.isBuffer(reply) ? reply.toString('utf8') : String(reply), configKey(prefix));
  }

  /**
   * A slot said the configuration is at `version` or later: the binding of the configuration in force, read
   * from Redis (once for every stale answer arriving meanwhile), or undefined when it cannot be read.
   */
  readonly #onStale = (version: number): Promise<BoundStore | undefined> => {
    if (this.#config.version >= version) return Promise.resolve(this);
    this.#reading ??= this.#read()
      .then((config) => {
        if (config !== undefined && config.version > this.#config.version) this.#adopt(config);
        if (this.#config.version < version) {
          throw new SluiceError(
            'STORE_UNAVAILABLE',
            `a slot of limiter ${JSON.stringify(this.#parts.prefix)} is at configuration version ${version}, but the ` +
              `stored configuration is at ${config?.version ?? 1}`,
          );
        }
        return this as BoundStore;
      })
      .catch((error: unknown) => {
        this.#parts.report(asError(error));
        return undefined;
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  };

  /** Decides under `config` from now on. */
  #adopt(config: LiveConfig): void {
    if (config.version <= this.#config.version) return;
    const old = this.#inner;
    this.#config = config;
    this.#configuration = { version: config.version, rules: config.rules.map((entry) => entry.rule) };
    this.#inner = this.#parts.bindVersion(config, this.#onStale);
    this.#remembered.clear();
    this.#carrying = new Map();
    const links = config.rules.flatMap((entry) => entry.from.map((link) => link.until));
    this.#carryUntil = links.length === 0 ? 0 : Math.max(...links);
    old.unbind();
    this.#parts.adopted(this.#configuration);
  }

  /**
   * While a change's carry window is open: the carry of `key`'s states to the rules in force when this node
   * has not made it yet (undefined: nothing to wait for).
   */
  #carryFirst(key: string): Promise<void> | undefined {
    if (this.#carryUntil === 0) return undefined;
    const now = this.#parts.localClock.now();
    if (now > this.#carryUntil) {
      this.#carryUntil = 0;
      return undefined;
    }
    if (this.#remembered.has(key)) return undefined;
    const under = this.#carrying.get(key);
    if (under !== undefined) return under;
    const carry = this.#carry(key, now).finally(() => this.#carrying.delete(key));
    this.#carrying.set(key, carry);
    return carry;
  }

  /** Runs carry_key.lua for `key`: a failure is left to the decision that follows (its fail mode). */
  async #carry(key: string, nowMs: number): Promise<void> {
    const config = this.#config;
    const carried = config.rules
      .map((entry) => ({ ...entry, from: entry.from.filter((link) => link.until >= nowMs) }))
      .filter((entry) => entry.from.length > 0);
    if (carried.length === 0) {
      this.#remembered.set(key, true);
      return;
    }
    const { connection, prefix, timeoutMs, decisionClock } = this.#parts;
    const first = carried[0] as LiveRule;
    const own = stateKey(prefix, identityOf(first.rule, key), generationName(first.rule.name, first.generation));
    const keys = [versionKey(prefix, connection.isCluster ? calculateSlot(own) : undefined)];
    const args = [
      String(config.version),
      decisionClock === undefined ? '' : numArg(decisionClock.now()),
      String(carried.length),
    ];
    for (const entry of carried) {
      const identity = identityOf(entry.rule, key);
      keys.push(stateKey(prefix, identity, generationName(entry.rule.name, entry.generation)));
      args.push(String(entry.from.length), ...ruleArgs([entry.rule]), meta(entry.rule, '-'));
      for (const link of entry.from) {
        keys.push(stateKey(prefix, identity, generationName(link.rule.name, link.generation)));
        args.push(...ruleArgs([link.rule]), meta(link.rule, link.mode));
      }
    }
    const kinds = [
      ...new Set(carried.flatMap((entry) => [entry.rule.kind, ...entry.from.map((link) => link.rule.kind)])),
    ];
    try {
      await withDeadline(connection.runScript(carryKeyScript(kinds), keys, args), timeoutMs, 'a carry');
      if (this.#config === config) this.#remembered.set(key, true);
    } catch (error) {
      const newer = versionError(error, 'SLUICE_STALE');
      if (newer !== undefined && (await this.#onStale(newer)) !== undefined && this.#config !== config) {
        const again = this.#carryFirst(key);
        if (again !== undefined) await again;
      }
      // Otherwise the decision that follows meets the same failure and answers by the fail mode.
    }
  }
}

/** The meta carry_key.lua reads beside a rule: limit, burst, state format, carry mode. */
function meta(rule: Algorithm, mode: string): string {
  return `${numArg(rule.limit)}\n${numArg(rule.burst)}\n${rule.stateFormat}\n${mode}`;
}

function storeUnavailable(what: string, cause: unknown): SluiceError {
  return new SluiceError('STORE_UNAVAILABLE', `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, {
    cause,
  });
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
