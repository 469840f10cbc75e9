import type { SemaphoreBinding, SemaphoreSpec, SlotAttempt } from '@sluice/core';
import { withDeadline } from './deadline.js';
import type { FailMode } from './fail-mode.js';
import { encodeIdentity, freedChannel, semaphoreKeys } from './key-layout.js';
import { isKeyScopedError } from './reply-errors.js';
import { numArg } from './rule-args.js';
import type { RedisConnection, ScriptReply } from './connection/connection.js';
import { semaphoreScript } from './scripts.js';

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
  mayCallRedis(): boolean;
  reportSuccess(): void;
  reportFailure(error: unknown, key: string): void;
}

const text = (reply: ScriptReply): string => (Buffer.isBuffer(reply) ? reply.toString() : String(reply));

/**
 * A concurrencyLimiter's slots on Redis (semaphore.lua): every process's holders in one sorted set per key,
 * scored by lease, and its waiters in a queue in arrival order. While Redis is away the fail mode decides:
 * 'local' counts this node's share in memory, 'open' grants, 'closed' refuses; a slot granted that way is
 * released there, never on Redis.
 */
export class RedisSemaphore implements SemaphoreBinding {
  readonly #ctx: SemaphoreContext;
  readonly #spec: SemaphoreSpec;
  readonly #listeners = new Set<(key: string) => void>();
  /** Tickets the fail mode granted: released where they were granted. */
  readonly #local = new Set<string>();
  readonly #open = new Set<string>();
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

  /** The store's health changed: every key with callers queued here tries again, on Redis or by the fail mode. */
  healthChanged(): void {
    for (const key of [...this.#queuedKeys]) this.freed(key);
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

  /** Runs a call on Redis, reporting to the health machine; undefined when it failed (the fail mode stands in). */
  async #onRedis(key: string, op: string, extra: readonly string[]): Promise<ScriptReply | undefined> {
    if (!this.#ctx.mayCallRedis()) return undefined;
    try {
      const reply = await this.#call(key, op, extra);
      this.#ctx.reportSuccess();
      return reply;
    } catch (error) {
      if (!isKeyScopedError(error)) this.#ctx.reportFailure(error, semaphoreKeys(this.#spec.prefix, key)[0]);
      return undefined;
    }
  }

  async attempt(key: string, ticket: string, queue: boolean): Promise<SlotAttempt> {
    const reply = await this.#onRedis(key, 'acquire', [ticket, queue ? '1' : '0']);
    if (reply === undefined) return this.#fallbackAttempt(key, ticket, queue);
    const [granted, hint] = reply as number[];
    if (granted === 1) {
      this.#queuedKeys.delete(key);
      return { granted: true, source: 'store' };
    }
    if (queue) this.#queuedKeys.add(key);
    // At least once a lease a waiter looks again (a release message can be missed across a reconnect), and
    // every leaseMs / 3 where nothing hears releases.
    const every = this.#ctx.hearsReleases ? this.#spec.leaseMs : this.#spec.leaseMs / 3;
    return { granted: false, retryInMs: hint === undefined || hint < 0 ? every : Math.min(hint, every) };
  }

  async #fallbackAttempt(key: string, ticket: string, queue: boolean): Promise<SlotAttempt> {
    if (this.#ctx.failMode === 'open') {
      this.#open.add(ticket);
      return { granted: true, source: 'fallback' };
    }
    const local = this.#ctx.local;
    if (local === undefined) return { granted: false, retryInMs: undefined, refused: true };
    const attempt = await local.attempt(key, ticket, queue);
    if (attempt.granted) this.#local.add(ticket);
    return attempt.granted ? { granted: true, source: 'fallback' } : attempt;
  }

  async release(key: string, ticket: string): Promise<boolean> {
    if (this.#open.delete(ticket)) return true;
    if (this.#local.delete(ticket)) return (await this.#ctx.local?.release(key, ticket)) ?? false;
    // A release Redis could not take frees the slot when its lease runs out: it is no longer renewed.
    const reply = await this.#onRedis(key, 'release', [ticket]);
    return reply === 1;
  }

  async leave(key: string, ticket: string): Promise<void> {
    await this.#ctx.local?.leave(key, ticket);
    // A place Redis could not drop goes when its lease runs out: it is no longer renewed.
    await this.#onRedis(key, 'leave', [ticket]);
  }

  async renew(key: string, held: readonly string[], waiting: readonly string[]): Promise<readonly string[]> {
    const onRedis = held.filter((t) => !this.#local.has(t) && !this.#open.has(t));
    if (onRedis.length === 0 && waiting.length === 0) return [];
    if (!this.#ctx.mayCallRedis()) throw new Error('Redis is failing: leases are renewed once it answers');
    try {
      const reply = await this.#call(key, 'renew', [String(onRedis.length), ...onRedis, ...waiting]);
      this.#ctx.reportSuccess();
      return (reply as ScriptReply[]).map(text);
    } catch (error) {
      if (!isKeyScopedError(error)) this.#ctx.reportFailure(error, semaphoreKeys(this.#spec.prefix, key)[0]);
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
