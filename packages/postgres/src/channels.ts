/**
 * postgresEngine's messages: NOTIFY on one PostgreSQL channel per schema (the schema's own name: a channel is
 * an identifier of at most 63 bytes, a sluice channel any string), the sluice channel and the message inside
 * the payload as JSON. Heard on one connection of the pool taken at the first subscription (LISTEN) and given
 * back when the last one stops. At most once: a message published while the listening connection is away is
 * lost, as the contract allows. A listening connection that fails (pg_terminate_backend, a restart) is
 * replaced at once while anyone listens, and again at the next publish when that failed too.
 */
import { SluiceRangeError } from '@sluice/core';
import type { Notification, PoolClient } from 'pg';
import type { Database } from './transaction.js';

/** The first wait before a failed LISTEN is tried again, and the longest (see #heal). */
const HEAL_FIRST_MS = 100;
const HEAL_MAX_MS = 2_000;

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7_999;

export class EngineChannels {
  readonly #db: Database;
  readonly #listeners = new Map<string, Set<(message: string) => void>>();
  #client: Promise<PoolClient> | undefined;
  /** How to give each listening connection back to the pool, its handlers taken off first. */
  readonly #giveBack = new WeakMap<PoolClient, (broken: boolean) => void>();

  constructor(db: Database) {
    this.#db = db;
  }

  async publish(channel: string, message: string): Promise<void> {
    const payload = JSON.stringify([channel, message]);
    const bytes = Buffer.byteLength(payload, 'utf8');
    if (bytes > MAX_PAYLOAD_BYTES)
      throw new SluiceRangeError(
        'message',
        message,
        `publish: channel and message must fit a PostgreSQL NOTIFY payload (${MAX_PAYLOAD_BYTES} bytes as JSON), got ${bytes} bytes`,
      );
    this.#heal();
    await this.#db.bounded('a message', () =>
      this.#db.pool.query('SELECT pg_notify($1, $2)', [this.#db.schema, payload]).then(() => undefined),
    );
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    let set = this.#listeners.get(channel);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(channel, set);
    }
    // A listener's own failure is its own: it never stops delivery to the others.
    const own = (message: string): void => {
      try {
        listener(message);
      } catch {
        // ignored, as memoryEngine does
      }
    };
    set.add(own);
    let stopped = false;
    const stop = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      const listeners = this.#listeners.get(channel);
      if (listeners === undefined || !listeners.delete(own) || listeners.size > 0) return;
      this.#listeners.delete(channel);
      if (this.#listeners.size === 0) await this.#close();
    };
    try {
      await this.#db.bounded('a subscription', () => this.#listening());
    } catch (error) {
      await stop().catch(() => undefined);
      throw error;
    }
    return stop;
  }

  #listening(): Promise<PoolClient> {
    if (this.#client !== undefined) return this.#client;
    const made = (async () => {
      const client = await this.#db.pool.connect();
      const heard = (n: Notification): void => this.#heard(n);
      // A listening connection that fails is given back (closed), and another one listens in its place.
      const failed = (): void => {
        if (this.#client === made) this.#client = undefined;
        giveBack(client, true);
        this.#heal();
      };
      let given = false;
      const giveBack = (c: PoolClient, broken: boolean): void => {
        if (given) return;
        given = true;
        c.off('notification', heard);
        c.off('error', failed);
        c.release(broken);
      };
      client.on('notification', heard);
      client.on('error', failed);
      this.#giveBack.set(client, (broken) => giveBack(client, broken));
      try {
        await client.query(`LISTEN "${this.#db.schema}"`);
      } catch (error) {
        this.#giveBack.delete(client);
        giveBack(client, true);
        throw error;
      }
      return client;
    })();
    this.#client = made;
    made.catch(() => {
      if (this.#client === made) this.#client = undefined;
    });
    return made;
  }

  /**
   * Listens again when someone listens and no connection does (it failed); a failed try is tried again after
   * a wait that doubles up to HEAL_MAX_MS (PostgreSQL restarting, every connection of the pool being ended),
   * on a timer that keeps no process alive.
   */
  #heal(waitMs = HEAL_FIRST_MS): void {
    if (this.#client !== undefined || this.#listeners.size === 0) return;
    this.#listening().catch(() => {
      const retry = setTimeout(() => this.#heal(Math.min(waitMs * 2, HEAL_MAX_MS)), waitMs);
      retry.unref?.();
    });
  }

  #heard(notification: Notification): void {
    if (notification.channel !== this.#db.schema || notification.payload === undefined) return;
    let channel: unknown;
    let message: unknown;
    try {
      [channel, message] = JSON.parse(notification.payload) as unknown[];
    } catch {
      return;
    }
    if (typeof channel !== 'string' || typeof message !== 'string') return;
    const set = this.#listeners.get(channel);
    if (set !== undefined) for (const each of [...set]) each(message);
  }

  async #close(): Promise<void> {
    const made = this.#client;
    this.#client = undefined;
    if (made === undefined) return;
    const client = await made.catch(() => undefined);
    if (client === undefined) return;
    const giveBack = this.#giveBack.get(client) ?? ((broken: boolean) => client.release(broken));
    this.#giveBack.delete(client);
    try {
      await client.query('UNLISTEN *');
      giveBack(false);
    } catch {
      giveBack(true);
    }
  }
}
