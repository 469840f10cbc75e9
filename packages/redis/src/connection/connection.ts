import type { LuaScript } from '../scripts.js';

/** A script's reply as every adapter gives it: bulk strings as Buffers, integers as numbers, arrays nested. */
export type ScriptReply = Buffer | number | null | ScriptReply[];

/** A channel subscription on a connection of the store's own; `close()` ends it and its connection. */
export interface ResetSubscriber {
  /** Subscribes to a channel. */
  subscribe(channel: string): Promise<void>;
  /** Unsubscribes from a channel. */
  unsubscribe(channel: string): Promise<void>;
  /** Closes the subscriber connection (it is the store's own). */
  close(): Promise<void>;
}

/**
 * What sluice's stores need from a Redis client, whichever library it comes from: the narrow seam every
 * adapter implements (ioredis and iovalkey, node-redis, Valkey GLIDE), standalone or Cluster. Each call that
 * takes keys routes by them on a Cluster; the keys of one call always share a slot.
 */
export interface RedisConnection {
  /** The client library and kind, for messages: "ioredis Cluster", "node-redis client", "GLIDE cluster client". */
  readonly description: string;
  readonly isCluster: boolean;
  /**
   * Runs a script with binary-safe arguments: by FCALL once its function library is loaded on the server,
   * else by its sha1, sending the source when the server does not know it (a restart, a failover, SCRIPT
   * FLUSH). No call fails for NOSCRIPT or for a lost library (see FunctionLibraries).
   */
  runScript(script: LuaScript, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<ScriptReply>;
  /** Deletes keys of one slot. */
  del(keys: readonly string[]): Promise<void>;
  /** Whether `key` exists: a cheap read routed to its slot (the health probe; an allowed key's ban marker). */
  exists(key: string): Promise<boolean>;
  /** Publishes a message to a channel. */
  publish(channel: string, message: string): Promise<void>;
  /** `INFO section` from one primary (any, on a Cluster), as text: the start-up checks read the server's settings. */
  info(section: string): Promise<string>;
  /**
   * A subscriber on a connection of its own (a subscribed connection can do nothing else), calling
   * `onMessage` for each message; undefined where the library cannot make one from the user's client.
   */
  subscriber(onMessage: (channel: string, message: string) => void): ResetSubscriber | undefined;
  /** False while the client knows it is not connected (a command now would only wait in its queue). */
  readonly connected: boolean;
  /**
   * Asks a client waiting out its reconnect backoff to connect now, never starting a second reconnect loop
   * and never touching a client its owner closed. A no-op where the library reconnects on its own schedule.
   */
  nudgeReconnect(): void;
  /** Listens to the client's connection errors and reconnects; returns the function that stops listening. */
  watch(onError: (error: Error) => void, onReady: () => void): () => void;
}
