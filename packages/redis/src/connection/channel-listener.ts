import type { RedisConnection, ResetSubscriber } from './connection.js';
import { withDeadline } from '@sluice/core/internal';

/**
 * The longest a subscription may take before a store stops waiting for it (a Cluster's SUBSCRIBE goes to one
 * node, which may be starting): the store works without it, missing messages until it lands.
 */
const SUBSCRIBE_DEADLINE_MS = 5_000;

/**
 * A store's channels (resets, freed slots, configuration changes heard from other nodes) on one subscriber
 * connection of the store's own, made at the first `listen` (a subscribed connection can do nothing else).
 * @example
 * const channels = new ChannelListener(connection, 200)
 * channels.listen(resetChannel('api'), (message) => heard(message))
 * await channels.subscribed() // store.ready(): from here, other nodes' messages are heard
 */
export class ChannelListener {
  readonly #connection: RedisConnection;
  readonly #timeoutMs: number;
  readonly #handlers = new Map<string, (message: string) => void>();
  #subscriber: ResetSubscriber | undefined;
  readonly #subscriptions: Promise<void>[] = [];

  constructor(connection: RedisConnection, timeoutMs: number) {
    this.#connection = connection;
    this.#timeoutMs = timeoutMs;
  }

  /** False until a channel was listened to, and where the client library cannot make a subscriber. */
  get hears(): boolean {
    return this.#subscriber !== undefined;
  }

  /** Calls `onMessage` with each message on `channel` from now on. False when the client library cannot subscribe. */
  listen(channel: string, onMessage: (message: string) => void): boolean {
    this.#handlers.set(channel, onMessage);
    this.#subscriber ??= this.#connection.subscriber((from, message) => this.#handlers.get(from)?.(message));
    const subscribed = this.#subscriber?.subscribe(channel);
    if (subscribed !== undefined) {
      this.#subscriptions.push(
        withDeadline(subscribed, Math.max(this.#timeoutMs, SUBSCRIBE_DEADLINE_MS), 'a subscription').catch(() => {
          // Subscribed again on reconnect by the client itself; a missed message is made up for by time
          // (a cached denial's retryAfterMs, a waiter's next try, a lease's or a heartbeat's version check).
        }),
      );
    }
    return this.#subscriber !== undefined;
  }

  /** Stops hearing `channel`. */
  stop(channel: string): void {
    this.#handlers.delete(channel);
    this.#subscriber?.unsubscribe(channel).catch(() => {
      // A subscriber that lost its connection has no subscription left to drop.
    });
  }

  /** Settles once every subscription asked for so far landed (or gave up after its deadline). */
  async subscribed(): Promise<void> {
    await Promise.all(this.#subscriptions);
  }

  /** Closes the subscriber connection. */
  async close(): Promise<void> {
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    this.#handlers.clear();
    await subscriber?.close().catch(() => undefined);
  }
}
