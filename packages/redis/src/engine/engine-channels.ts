import { SluiceError } from '@sluice/core';
import { ChannelListener } from '../connection/channel-listener.js';
import type { RedisConnection } from '../connection/connection.js';
import { withDeadline } from '@sluice/core/internal';
import { resetChannel } from '../key-layout.js';

/**
 * The Redis channel of an engine channel: `channel` is named as a limiter's prefix is (`resetChannel`:
 * `<channel>:sluice-reset`), so `publish(prefix, encodeIdentity(key))` is what redisStore's reset of `key`
 * announces, and `publish(prefix, '')` its configuration change.
 * @example
 * redisChannel('api') // 'api:sluice-reset'
 */
export const redisChannel = (channel: string): string => resetChannel(channel);

/**
 * redisEngine's pub/sub: publishes on the caller's connection; hears on one subscriber connection of the
 * engine's own (ChannelListener), made at the first subscription and closed when the last one stops, or on a
 * store's (`shared`: redisStore's one subscriber for every channel it hears, closed by the store). Several
 * listeners of one channel each hear every message.
 */
export class EngineChannels {
  readonly #connection: RedisConnection;
  readonly #timeoutMs: number;
  readonly #listeners = new Map<string, Set<(message: string) => void>>();
  readonly #shared: ChannelListener | undefined;
  #channels: ChannelListener | undefined;

  constructor(connection: RedisConnection, timeoutMs: number, shared?: ChannelListener) {
    this.#connection = connection;
    this.#timeoutMs = timeoutMs;
    this.#shared = shared;
    this.#channels = shared;
  }

  async publish(channel: string, message: string): Promise<void> {
    await withDeadline(this.#connection.publish(redisChannel(channel), message), this.#timeoutMs, 'a message');
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    const name = redisChannel(channel);
    const channels = (this.#channels ??= new ChannelListener(this.#connection, this.#timeoutMs));
    let set = this.#listeners.get(name);
    if (set === undefined) {
      const heard = new Set<(message: string) => void>();
      set = heard;
      this.#listeners.set(name, heard);
      const hears = channels.listen(name, (message) => {
        for (const each of [...heard]) each(message);
      });
      if (!hears) {
        this.#listeners.delete(name);
        throw new SluiceError(
          'STORE_MISCONFIGURED',
          `redisEngine cannot subscribe with ${this.#connection.description}: its client library makes no subscriber`,
        );
      }
    }
    const own = (message: string) => listener(message);
    set.add(own);
    await channels.subscribed();
    return async () => {
      const listeners = this.#listeners.get(name);
      if (listeners === undefined || !listeners.delete(own) || listeners.size > 0) return;
      this.#listeners.delete(name);
      channels.stop(name);
      if (this.#listeners.size === 0 && this.#channels === channels && channels !== this.#shared) {
        this.#channels = undefined;
        await channels.close();
      }
    };
  }
}
