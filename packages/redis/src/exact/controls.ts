import { type Algorithm, type Clock, type Permits, SluiceError } from '@sluice/core';
import {
  type GrantSource,
  identityOf,
  mostPermits,
  permitsOfRule,
  withDeadline,
  type FallbackBinding,
  type EngineHealth,
} from '@sluice/core/internal';
import calculateSlot from 'cluster-key-slot';
import type { RedisConnection, ScriptReply } from '../connection/connection.js';
import { banKey, banMarkerKey, stateKey, versionKeyBeside } from '../key-layout.js';
import { versionError } from '../reply-errors.js';
import { adjustScript, blockScript } from '../scripts.js';
import { wirePermits } from './protocol.js';
import { type GrantTime, adjustArgs, numArg, ruleArgs } from './rule-args.js';

/** How many keys' fail-mode charges go to Redis at once after an outage (see settleFallback). */
const SETTLE_CHUNK = 32;

/** What the controls of one limiter need: where its states are, the clock, the deadline, health and fallback. */
export interface ControlsOptions {
  readonly connection: RedisConnection;
  readonly rules: readonly Algorithm[];
  readonly prefix: string;
  /** A rule's part of its state keys' names (see TransportOptions.stateName). */
  readonly stateName: (rule: Algorithm) => string;
  /** The client clock, or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  readonly timeoutMs: number;
  readonly health: EngineHealth;
  readonly fallback: FallbackBinding;
  /** Tells every node to drop a key from its deny cache (pub/sub), when there is one. */
  readonly publishReset: ((key: string) => Promise<unknown>) | undefined;
  /**
   * Tells every node a refund may have freed a key they were denying (a cached denial, a lease that found the
   * key spent), when something caches such denials: sent only when adjust.lua says the key was denying one
   * permit before the refund. Undefined: `publishReset`.
   */
  readonly publishRefund?: ((key: string) => Promise<unknown>) | undefined;
  /**
   * The configuration version the rules are (live limits): each adjustment sends it with its slot's version
   * key, and a slot whose configuration is newer rejects with its SLUICE_STALE error, untouched, unreported
   * and never handed to the fail mode (the caller re-reads the configuration). Undefined: not checked.
   */
  readonly version?: (() => number) | undefined;
}

/**
 * A limiter's controls on Redis: reset, refund, penalize, block, unblock. Each is one atomic script call per
 * slot, bounded by timeoutMs like a decision; while Redis is away, or when the call fails, the fail mode takes
 * it instead where it keeps state ('local'), and the call rejects with SluiceError('STORE_UNAVAILABLE') where it
 * keeps none ('open', 'closed'). A refund goes where its grant was counted (see refund).
 * @example
 * const controls = new RedisControls(options)
 * await controls.block('user:1', 60_000)
 */
export class RedisControls {
  readonly #o: ControlsOptions;

  constructor(options: ControlsOptions) {
    this.#o = options;
  }

  #stateKey(rule: Algorithm, key: string): string {
    return stateKey(this.#o.prefix, identityOf(rule, key), this.#o.stateName(rule));
  }

  /**
   * Forgets the request key's own rules (rules counted against other identities are shared, and stay) and its
   * ban, in the fail mode and on Redis, and tells every node to drop it from its deny cache. A reset Redis
   * could not do rejects: no fail mode can stand in for it.
   */
  async reset(key: string): Promise<void> {
    const { rules, prefix, connection, fallback } = this.#o;
    fallback.reset(key);
    const own = rules.filter((rule) => rule.scope === undefined);
    const ban = banKey(prefix, key);
    await this.#onRedis(key, 'reset', own[0] === undefined ? ban : this.#stateKey(own[0], key), async () => {
      // Every rule's state is one key (a window algorithm's too): adjust.lua deletes them, then the ban.
      if (own.length === 0) await connection.del([ban]);
      else await this.#adjust(own, key, 'reset', 0, undefined, [ban]);
      await this.#o.publishReset?.(key);
    });
  }

  /**
   * Gives back up to `permits` to the key's own rules where the grant was counted: a fail mode's grant to the
   * fail mode ('open' counted it nowhere), a Redis grant to Redis in one atomic call (they share the key's
   * slot), never to the fail mode, which never counted it (a refund Redis cannot take then rejects). A grant
   * of unknown origin goes wherever decisions go now. A refund on Redis of a key that was denying one permit
   * is announced as a reset is: a denial another node cached may now be a grant. Any other refund is not (no
   * node can hold a denial of a key that grants), so a refund per request costs no message per request.
   */
  async refund(key: string, permits: Permits, grantedMsAgo: number, grant?: GrantSource): Promise<void> {
    const own = this.#o.rules.filter((rule) => rule.scope === undefined);
    if (own.length === 0) return;
    const { fallback, health } = this.#o;
    const granted = Number.isNaN(grantedMsAgo) ? undefined : { agoMs: grantedMsAgo };
    if (grant === 'fallback') {
      // What Redis was charged with since (see settleFallback) goes back there too, while it answers.
      const uncharged = fallback.refund(key, permits, grantedMsAgo);
      const charged: Permits = Object.fromEntries(
        own.map((rule) => [rule.name, permitsOfRule(permits, rule) - permitsOfRule(uncharged, rule)]),
      );
      if (mostPermits(charged) > 0 && health.healthy)
        await this.#onRedis(key, 'refund', this.#stateKey(own[0] as Algorithm, key), async () => {
          this.#announceRefund(key, await this.#adjust(own, key, 'refund', charged, granted));
        }).catch(() => undefined);
      return;
    }
    const onRedis = async () => {
      this.#announceRefund(key, await this.#adjust(own, key, 'refund', permits, granted));
    };
    if (grant === 'store') {
      if (!health.healthy)
        throw new SluiceError(
          'STORE_UNAVAILABLE',
          `refund(${JSON.stringify(key)}): Redis counted this grant and is away; the fail mode never counted it`,
        );
      await this.#onRedis(key, 'refund', this.#stateKey(own[0] as Algorithm, key), onRedis);
      return;
    }
    await this.#control(key, 'refund', () => fallback.refund(key, permits, grantedMsAgo), onRedis);
  }

  /**
   * Tells every node a refund reached `key`'s states, when adjust.lua's `reply` says the key was denying one
   * permit before it. Not awaited: the refund is made whether or not the message leaves (a node that misses it
   * asks Redis again within DENY_CACHE_TRUST_MS), and a refund must not wait a round trip more for it. Sent
   * before the refund resolves, so anything the caller publishes after it is heard after it.
   */
  #announceRefund(key: string, reply: ScriptReply): void {
    if (reply !== 1) return;
    (this.#o.publishRefund ?? this.#o.publishReset)?.(key).catch(() => undefined);
  }

  /** Takes `permits` from every rule the key is counted against, one atomic call per slot. */
  async penalize(key: string, permits: Permits): Promise<void> {
    await this.#control(
      key,
      'penalize',
      () => this.#o.fallback.penalize(key, permits),
      () => this.#penalizeAll(key, permits),
    );
  }

  async #penalizeAll(key: string, permits: Permits): Promise<void> {
    const bySlot = new Map<number, Algorithm[]>();
    for (const rule of this.#o.rules) {
      const slot = this.#o.connection.isCluster ? calculateSlot(this.#stateKey(rule, key)) : 0;
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), rule]);
    }
    await Promise.all([...bySlot.values()].map((rules) => this.#adjust(rules, key, 'penalize', permits, undefined)));
  }

  #penalizeOnRedis(key: string, permits: Permits): Promise<void> {
    return this.#onRedis(key, 'settling the fail mode', this.#stateKey(this.#o.rules[0] as Algorithm, key), () =>
      this.#penalizeAll(key, permits),
    );
  }

  /**
   * Charges Redis with what the fail mode granted while it was away (`charges`, from FallbackBinding.takeCharges): each key's
   * permits taken from every rule the key is counted against, as a penalty (past the limit if need be), so the
   * outage's grants count against the limit after it. SETTLE_CHUNK keys at a time; a charge Redis cannot take
   * now is kept for the next recovery. The counts reported are each charge's largest count of one rule.
   */
  async settleFallback(charges: [string, Permits][]): Promise<{ keys: number; permits: number; kept: number }> {
    const { fallback } = this.#o;
    const sum = (list: [string, Permits][]) => list.reduce((total, [, permits]) => total + mostPermits(permits), 0);
    for (let i = 0; i < charges.length; i += SETTLE_CHUNK) {
      const chunk = charges.slice(i, i + SETTLE_CHUNK);
      const failed = await Promise.all(
        chunk.map(([key, permits]) =>
          this.#penalizeOnRedis(key, permits).then(
            () => false,
            () => true,
          ),
        ),
      );
      if (failed.some((f) => f)) {
        for (const [key, permits] of charges.slice(i)) fallback.keepCharge(key, permits);
        return { keys: i, permits: sum(charges.slice(0, i)), kept: sum(charges.slice(i)) };
      }
    }
    return { keys: charges.length, permits: sum(charges), kept: 0 };
  }

  /** Bans the key (block.lua keeps a longer ban in force). */
  async block(key: string, ms: number): Promise<void> {
    const now = this.#o.decisionClock?.now();
    await this.#control(
      key,
      'block',
      () => this.#o.fallback.block(key, ms),
      async () => {
        const ban = banKey(this.#o.prefix, key);
        const slot = this.#o.connection.isCluster ? calculateSlot(ban) : undefined;
        await this.#o.connection.runScript(
          blockScript(),
          [ban, banMarkerKey(this.#o.prefix, slot)],
          [numArg(ms), now === undefined ? '' : numArg(now)],
        );
      },
    );
  }

  /** Lifts the key's ban, and tells every node to drop the key from its deny cache. */
  async unblock(key: string): Promise<void> {
    await this.#control(
      key,
      'unblock',
      () => this.#o.fallback.unblock(key),
      async () => {
        await this.#o.connection.del([banKey(this.#o.prefix, key)]);
        await this.#o.publishReset?.(key);
      },
    );
  }

  /** One atomic adjust.lua call for `rules` of `key` (all in one slot); `extraKeys` follow (reset: the ban). Its reply: see adjust.lua. */
  async #adjust(
    rules: readonly Algorithm[],
    key: string,
    op: 'refund' | 'penalize' | 'reset',
    permits: Permits,
    granted: GrantTime | undefined,
    extraKeys: readonly string[] = [],
  ): Promise<ScriptReply> {
    const keys = [...rules.map((rule) => this.#stateKey(rule, key)), ...extraKeys];
    const args = adjustArgs(ruleArgs(rules), op, wirePermits(permits, rules), granted, this.#o.decisionClock?.now());
    const version = this.#o.version;
    if (version !== undefined) {
      keys.push(versionKeyBeside(this.#o.prefix, keys[0] as string, this.#o.connection.isCluster));
      args.push(String(version()));
    }
    return await this.#o.connection.runScript(adjustScript(rules.map((rule) => rule.kind)), keys, args);
  }

  /**
   * A control on Redis while it answers; the fail mode's when Redis is away or the call fails ('local'), or a
   * rejection naming the control ('open', 'closed').
   */
  async #control(key: string, what: string, locally: () => void, onRedis: () => Promise<void>): Promise<void> {
    const { fallback, health } = this.#o;
    if (health.healthy) {
      try {
        await this.#onRedis(key, what, this.#stateKey(this.#o.rules[0] as Algorithm, key), onRedis);
        return;
      } catch (error) {
        if (!fallback.keepsState || versionError(error, 'SLUICE_STALE') !== undefined) throw error;
      }
    } else if (!fallback.keepsState) {
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `${what}(${JSON.stringify(key)}) could not reach Redis, and failMode '${fallback.mode}' keeps no state to ` +
          `apply it to`,
      );
    }
    locally();
  }

  /** Runs `call` on Redis within timeoutMs; a failure is told to the health machine and rejects as STORE_UNAVAILABLE. */
  async #onRedis(key: string, what: string, probeKey: string, call: () => Promise<void>): Promise<void> {
    try {
      await withDeadline(call(), this.#o.timeoutMs, what);
      this.#o.health.reportSuccess();
    } catch (error) {
      // A newer configuration is no failure of Redis: the caller re-reads it and adjusts again.
      if (versionError(error, 'SLUICE_STALE') !== undefined) throw error;
      this.#o.health.reportFailure(error, probeKey);
      const why = error instanceof Error ? error.message : String(error);
      throw new SluiceError('STORE_UNAVAILABLE', `${what}(${JSON.stringify(key)}) could not be done on Redis: ${why}`, {
        cause: error,
      });
    }
  }
}
