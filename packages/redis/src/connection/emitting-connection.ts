import type { LuaScript } from '../scripts.js';
import type { ResetSubscriber, ScriptReply } from './connection.js';
import { type EmittingClient, watchEmitter } from './watch.js';

/** What ioredis, iovalkey and node-redis clients have in common, as the adapters use it. */
export interface EmittingRedisClient extends EmittingClient {
  exists(key: string): Promise<number>;
  publish(channel: string, message: string): Promise<number>;
}

/**
 * Runs a script by its sha1 (`run(false)`), and on NOSCRIPT (a restart, a failover, SCRIPT FLUSH) by its
 * source (`run(true)`), which also loads it: no call fails for NOSCRIPT.
 */
export async function runBySha(run: (bySource: boolean) => Promise<unknown>): Promise<ScriptReply> {
  try {
    return (await run(false)) as ScriptReply;
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    return (await run(true)) as ScriptReply;
  }
}

/**
 * The part of a RedisConnection that ioredis, iovalkey and node-redis clients share: the health probe's
 * EXISTS, the reset PUBLISH, listening to 'error' and 'ready', and the subscriber's own connection.
 */
export abstract class EmittingConnection<C extends EmittingRedisClient> {
  constructor(readonly client: C) {}

  abstract runScript(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply>;
  abstract subscriber(onMessage: (channel: string, message: string) => void): ResetSubscriber | undefined;

  async exists(key: string): Promise<boolean> {
    return (await this.client.exists(key)) > 0;
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.client.publish(channel, message);
  }

  watch(onError: (error: Error) => void, onReady: () => void): () => void {
    return watchEmitter(this.client, onError, onReady);
  }

  /**
   * A duplicate of the user's client for the reset subscriber (a subscribed connection can do nothing else).
   * Its errors are its own: a missed reset leaves a cached denial until its retryAfterMs at worst.
   */
  protected subscriberConnection<D extends EmittingClient>(duplicate: D): D {
    duplicate.on('error', () => {});
    return duplicate;
  }
}
