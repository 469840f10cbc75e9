import { encodeIdentity, freedChannel, semaphoreKeys } from './key-layout.js';
import { numArg } from './exact/rule-args.js';
import type { RedisConnection, ScriptReply } from './connection/connection.js';
import { semaphoreScript } from './scripts.js';
import {
  type EngineHealth,
  type FailMode,
  type SemaphoreBinding,
  type SemaphoreSpec,
  type SlotAttempt,
  withDeadline,
} from '@sluice/core/internal';

/** What a semaphore binding needs from its store: the connection, time, the fail mode and the health machine. */
export interface SemaphoreContext {
  readonly connection: RedisConnection;
  /** The client clock, or undefined for Redis TIME. */
  readonly decisionClock: { now(): number } | undefined;
  readonly timeoutMs: number;
  readonly failMode: FailMode;
  /** failMode 'local': this node's slots while Redis is away (a share of max). */
  readonly local: SemaphoreBinding | undefined;
  /** False while no subscriber hears releases: waiters then also try again every leaseMs / 3. */
  readonly hearsReleases: boolean;
  /** The store's health machine: calls skip Redis while it fails, and every call reports to it. */
  readonly health: EngineHealth;
}

const text = (reply: ScriptReply): string => (Buffer.isBuffer(reply) ? reply.toString() : String(reply));

/**
 * A concurrencyLimiter's slots on Redis (semaphore.lua): every process's holders in one sorted set per key,
 * scored by lease, and its waiters in a queue in arrival order. While Redis is away the fail mode decides:
 * 'local' counts this node's share in memory (its holders on Redis fill their part of it), 'open' grants, 'closed' refuses. Once Redis answers again, the
 * first call for a key reconciles it first: the fail mode's slots still held become holders on Redis (so Redis
 * counts them before it grants anyone else), and calls that got no answer, which may still land from a client's
 * offline queue, are dropped, so they never leave phantom holders.
 */
export class RedisSemaphore implements SemaphoreBinding {
  readonly #ctx: SemaphoreContext;
  readonly #spec: SemaphoreSpec;
  readonly #listeners = new Set<(key: string) => void>();
  /** Tickets the fail mode granted and still held, by ticket: the key. Released where they were granted. */
  readonly #local = new Map<string, string>();
  readonly #open = new Map<string, string>();
  /** Tickets Redis granted and this node still holds, by ticket: the key. */
  readonly #heldOnRedis = new Map<string, string>();
  /**
   * Tickets of #heldOnRedis that also fill a slot of the fail mode's share: while Redis is away (or only slow
   * to answer) this node's holders on Redis are still inside, so 'local' grants only what is left of the share.
   */
  readonly #countedLocally = new Map<string, string>();
  /** Tickets whose call got no answer (it may land later), by ticket: the key. Dropped on Redis when it answers. */
  readonly #unanswered = new Map<string, string>();
  /** Keys being reconciled now. */
  readonly #reconciling = new Map<string, Promise<boolean>>();
  /** Keys with callers queued here, told when the store's health changes (their next try goes elsewhere). */
  readonly #queuedKeys = new Set<string>();
  readonly #stopLocal: (() => void) | undefined;
  readonly #unbind: () => void;

  constructor(ctx: SemaphoreContext, spec: SemaphoreSpec, unbind: () => void) {
    this.#ctx = ctx;
    this.#spec = spec;
    this.#unbind = unbind;
    this.#stopLocal = ctx.local?.onFreed((key) => this.freed(key));
  }

  /** A release anywhere (a message on the store's channel, or the fail mode's own slots): waiters of `key` try again. */
  freed(key: string): void {
    for (const listener of this.#listeners) listener(key);
  }

  /**
   * The store's health changed: once Redis answers, every key the fail mode touched is reconciled; every key
   * with callers queued here tries again, on Redis or by the fail mode.
   */
  healthChanged(): void {
    if (this.#ctx.health.healthy) {
      for (const ticket of [...this.#countedLocally.keys()]) this.#uncount(ticket);
      const keys = new Set([...this.#local.values(), ...this.#open.values(), ...this.#unanswered.values()]);
      for (const key of keys) void this.#reconciled(key);
    }
    for (const key of [...this.#queuedKeys]) this.freed(key);
  }

  /**
   * Resolves true once Redis knows what the fail mode did for `key` (at once when there is nothing to tell);
   * false when it could not be told (the caller's call then goes to the fail mode too).
   */
  #reconciled(key: string): Promise<boolean> | true {
    // The common case, checked first: the fail mode never stood in, so there is nothing to tell.
    if (this.#local.size === 0 && this.#open.size === 0 && this.#unanswered.size === 0) return true;
    const running = this.#reconciling.get(key);
    if (running !== undefined) return running;
    const adopt = [...this.#local, ...this.#open].filter(([, k]) => k === key).map(([ticket]) => ticket);
    const drop = [...this.#unanswered].filter(([t, k]) => k === key && !adopt.includes(t)).map(([ticket]) => ticket);
    if (adopt.length === 0 && drop.length === 0) return true;
    const done = this.#call(key, 'reconcile', [String(adopt.length), ...adopt, ...drop]).then(
      () => {
        this.#ctx.health.reportSuccess();
        for (const ticket of drop) this.#unanswered.delete(ticket);
        for (const ticket of adopt) {
          this.#unanswered.delete(ticket);
          const held = this.#open.delete(ticket) || this.#local.has(ticket);
          // Held on Redis from now on: renewed and released there; the fail mode's count lets it go.
          if (this.#local.delete(ticket)) void this.#ctx.local?.release(key, ticket);
          // Released while the reconcile was on its way: it must not stay a holder on Redis.
          if (!held) void this.#onRedis(key, 'release', [ticket], ticket);
          // A holder on Redis like any other: at the next failure it takes its part of the share.
          else this.#heldOnRedis.set(ticket, key);
        }
        return true;
      },
      (error: unknown) => {
        // It may still land: what it adopted is told again, or dropped if released by then, next time.
        for (const ticket of adopt) this.#unanswered.set(ticket, key);
        this.#ctx.health.reportFailure(error, semaphoreKeys(this.#spec.prefix, key)[0]);
        return false;
      },
    );
    this.#reconciling.set(key, done);
    void done.finally(() => this.#reconciling.delete(key));
    return done;
  }

  #call(key: string, op: string, extra: readonly string[]): Promise<ScriptReply> {
    const { prefix, max, leaseMs } = this.#spec;
    const now = this.#ctx.decisionClock?.now();
    const args = [
      op,
      now === undefined ? '' : numArg(now),
      String(max),
      numArg(leaseMs),
      freedChannel(prefix),
      encodeIdentity(key),
      ...extra,
    ];
    return withDeadline(
      this.#ctx.connection.runScript(semaphoreScript(), semaphoreKeys(prefix, key), args),
      this.#ctx.timeoutMs,
      `a slot for ${JSON.stringify(key)}`,
    );
  }

  /**
   * Runs a call on Redis (after reconciling the key), reporting to the health machine; undefined when it
   * failed (the fail mode stands in). `ticket`: a call that may leave state for it on Redis, remembered when
   * unanswered so that a late landing is dropped.
   */
  async #onRedis(key: string, op: string, extra: readonly string[], ticket?: string): Promise<ScriptReply | undefined> {
    if (!this.#ctx.health.healthy) return undefined;
    const ready = this.#reconciled(key);
    if (ready !== true && !(await ready)) return undefined;
    try {
      const reply = await this.#call(key, op, extra);
      this.#ctx.health.reportSuccess();
      return reply;
    } catch (error) {
      if (ticket !== undefined) this.#unanswered.set(ticket, key);
      this.#ctx.health.reportFailure(error, semaphoreKeys(this.#spec.prefix, key)[0]);
      return undefined;
    }
  }

  async attempt(key: string, ticket: string, queue: boolean, priority = 0): Promise<SlotAttempt> {
    const reply = await this.#onRedis(key, 'acquire', [ticket, queue ? '1' : '0', String(priority)], ticket);
    if (reply === undefined) return this.#fallbackAttempt(key, ticket, queue, priority);
    const [granted, hint] = reply as number[];
    if (granted === 1) {
      this.#heldOnRedis.set(ticket, key);
      this.#queuedKeys.delete(key);
      return { granted: true, source: 'store' };
    }
    if (queue) this.#queuedKeys.add(key);
    // At least once a lease a waiter looks again (a release message can be missed across a reconnect), and
    // every leaseMs / 3 where nothing hears releases.
    const every = this.#ctx.hearsReleases ? this.#spec.leaseMs : this.#spec.leaseMs / 3;
    return { granted: false, retryInMs: hint === undefined || hint < 0 ? every : Math.min(hint, every) };
  }

  async #fallbackAttempt(key: string, ticket: string, queue: boolean, priority: number): Promise<SlotAttempt> {
    if (this.#ctx.failMode === 'open') {
      this.#open.set(ticket, key);
      return { granted: true, source: 'fallback' };
    }
    const local = this.#ctx.local;
    if (local === undefined) return { granted: false, retryInMs: undefined, refused: true };
    // This node's holders on Redis take their slots of the share first (never queued: they are inside already).
    // Counted ahead of every local waiter (the highest priority): they are inside before any waiter.
    for (const [held, k] of this.#heldOnRedis) {
      if (k !== key || this.#countedLocally.has(held)) continue;
      const counted = await local.attempt(key, held, false, Number.POSITIVE_INFINITY);
      if (!counted.granted) break;
      // Released (or lost) while it was being counted: its slot goes back at once.
      if (this.#heldOnRedis.get(held) !== key) void local.release(key, held);
      else this.#countedLocally.set(held, key);
    }
    const attempt = await local.attempt(key, ticket, queue, priority);
    if (attempt.granted) this.#local.set(ticket, key);
    return attempt.granted ? { granted: true, source: 'fallback' } : attempt;
  }

  /** A holder on Redis no longer fills a slot of the fail mode's share. */
  #uncount(ticket: string): void {
    const key = this.#countedLocally.get(ticket);
    if (key === undefined) return;
    this.#countedLocally.delete(ticket);
    void this.#ctx.local?.release(key, ticket);
  }

  /** A holder on Redis is gone (released or its lease lost). */
  #letGo(ticket: string): void {
    this.#uncount(ticket);
    this.#heldOnRedis.delete(ticket);
  }

  async release(key: string, ticket: string): Promise<boolean> {
    this.#letGo(ticket);
    if (this.#open.delete(ticket)) return true;
    if (this.#local.delete(ticket)) return (await this.#ctx.local?.release(key, ticket)) ?? false;
    // A release Redis could not take is sent again once it answers (reconcile); until then the slot is no
    // longer renewed, so it frees itself when its lease runs out at the latest.
    const reply = await this.#onRedis(key, 'release', [ticket], ticket);
    return reply === 1;
  }

  async leave(key: string, ticket: string): Promise<void> {
    await this.#ctx.local?.leave(key, ticket);
    // A place Redis could not drop goes when its lease runs out (it is no longer renewed); one an unanswered
    // attempt may still leave is dropped when Redis answers again (reconcile).
    if (!this.#ctx.health.healthy) return;
    await this.#onRedis(key, 'leave', [ticket], ticket);
  }

  async renew(key: string, held: readonly string[], waiting: readonly string[]): Promise<readonly string[]> {
    if (!this.#ctx.health.healthy) throw new Error('Redis is failing: leases are renewed once it answers');
    const ready = this.#reconciled(key);
    if (ready !== true && !(await ready)) throw new Error('Redis could not be reconciled: renewed at the next try');
    const onRedis = held.filter((t) => !this.#local.has(t) && !this.#open.has(t));
    if (onRedis.length === 0 && waiting.length === 0) return [];
    try {
      const reply = await this.#call(key, 'renew', [String(onRedis.length), ...onRedis, ...waiting]);
      this.#ctx.health.reportSuccess();
      const lost = (reply as ScriptReply[]).map(text);
      for (const ticket of lost) this.#letGo(ticket);
      return lost;
    } catch (error) {
      this.#ctx.health.reportFailure(error, semaphoreKeys(this.#spec.prefix, key)[0]);
      throw error;
    }
  }

  onFreed(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  unbind(): void {
    this.#listeners.clear();
    this.#stopLocal?.();
    void this.#ctx.local?.unbind();
    this.#unbind();
  }
}
