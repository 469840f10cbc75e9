import { randomUUID } from 'node:crypto';
import type { Clock } from '@sluice/core';
import type { RedisConnection } from './connection/connection.js';
import { decodeIdentity, encodeIdentity, pauseChannel, pauseKeys } from './key-layout.js';
import { pauseScript } from './scripts.js';
import { type EngineHealth, type PauseBinding, withDeadline } from '@sluice/core/internal';

/** Past this many pauses known here, the ended ones are dropped as another is learnt. */
const KNOWN_SWEEP_AT = 256;

/** What a throttle's pauses need from their store. */
export interface PauseContext {
  readonly connection: RedisConnection;
  readonly timeoutMs: number;
  readonly health: EngineHealth;
  /** This process's clock: what a pause known here is kept on while Redis is away. */
  readonly localClock: Clock;
}

/**
 * A throttle's pauses on Redis (pause.lua): a pause is a key that expires when it ends, read by every node
 * before a call starts, and announced on the throttle's channel so the others hear of it at once. What this
 * node set or heard is kept here too: while Redis is away the pauses known here still hold (the throttle's
 * fail mode), and a pause whose call failed is not lost.
 * @example
 * const pauses = new RedisPauses(ctx, 'llm', stopListening)
 * await pauses.pause('openai', 30_000) // no call of 'openai' starts on any node for 30 s
 */
export class RedisPauses implements PauseBinding {
  readonly #ctx: PauseContext;
  readonly #prefix: string;
  /** Tells this binding's own messages from other nodes'. */
  readonly #id = randomUUID();
  readonly #listeners = new Set<(key: string | undefined, ms: number) => void>();
  /** Until when (local clock) each key is known paused here; the throttle-wide pause under ''. */
  readonly #known = new Map<string, number>();
  readonly #unbind: () => void;

  constructor(ctx: PauseContext, prefix: string, unbind: () => void) {
    this.#ctx = ctx;
    this.#prefix = prefix;
    this.#unbind = unbind;
  }

  /** The message announcing a pause: who set it, for how long, and of which key ('+' and the key; '*': every key). */
  #message(key: string | undefined, ms: number): string {
    return `${this.#id} ${ms} ${key === undefined ? '*' : `+${encodeIdentity(key)}`}`;
  }

  /** A message on the throttle's channel (from any binding of the prefix, this one's included). */
  heard(message: string): void {
    // The key is last, and may hold spaces: split at the first two only.
    const first = message.indexOf(' ');
    const second = message.indexOf(' ', first + 1);
    if (first < 0 || second < 0) return;
    const from = message.slice(0, first);
    const duration = Number(message.slice(first + 1, second));
    const which = message.slice(second + 1);
    if (!(duration > 0) || (which !== '*' && !which.startsWith('+'))) return;
    const key = which === '*' ? undefined : decodeIdentity(which.slice(1));
    this.#remember(key, duration);
    if (from === this.#id) return;
    for (const listener of this.#listeners) listener(key, duration);
  }

  #remember(key: string | undefined, ms: number): void {
    const slot = key === undefined ? '' : `+${key}`;
    const now = this.#ctx.localClock.now();
    const until = now + ms;
    if ((this.#known.get(slot) ?? 0) < until) this.#known.set(slot, until);
    // Pauses of many keys heard and never read again: the ended ones go, so memory follows the pauses in force.
    if (this.#known.size > KNOWN_SWEEP_AT) {
      for (const [known, end] of this.#known) if (end <= now) this.#known.delete(known);
    }
  }

  /** The longer rest of `key`'s pause and the throttle-wide one, as this node knows them. */
  #knownFor(key: string): number {
    const now = this.#ctx.localClock.now();
    let rest = 0;
    for (const slot of ['', `+${key}`]) {
      const until = this.#known.get(slot);
      if (until === undefined) continue;
      if (until <= now) this.#known.delete(slot);
      else rest = Math.max(rest, until - now);
    }
    return rest;
  }

  async pause(key: string | undefined, ms: number): Promise<void> {
    // Whole milliseconds, rounded up: a pause is never shorter than asked.
    const whole = Math.max(1, Math.ceil(ms));
    this.#remember(key, whole);
    if (!this.#ctx.health.healthy) return;
    const keys = pauseKeys(this.#prefix, key);
    try {
      await withDeadline(
        this.#ctx.connection.runScript(pauseScript(), keys, [
          'pause',
          key === undefined ? '1' : '2',
          String(whole),
          pauseChannel(this.#prefix),
          this.#message(key, whole),
        ]),
        this.#ctx.timeoutMs,
        'a pause',
      );
      this.#ctx.health.reportSuccess();
    } catch (error) {
      // Held here meanwhile; the other nodes learn of pauses only while Redis answers.
      this.#ctx.health.reportFailure(error, keys[0]);
    }
  }

  async pausedFor(key: string): Promise<number> {
    const known = this.#knownFor(key);
    if (!this.#ctx.health.healthy) return known;
    const keys = pauseKeys(this.#prefix, key);
    try {
      const reply = await withDeadline(
        this.#ctx.connection.runScript(pauseScript(), keys, ['read']),
        this.#ctx.timeoutMs,
        'a pause',
      );
      this.#ctx.health.reportSuccess();
      return Math.max(known, Number(reply));
    } catch (error) {
      this.#ctx.health.reportFailure(error, keys[0]);
      return known;
    }
  }

  onPaused(listener: (key: string | undefined, ms: number) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  unbind(): void {
    this.#listeners.clear();
    this.#unbind();
  }
}
