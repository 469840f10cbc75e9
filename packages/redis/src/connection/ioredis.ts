import type { LuaScript } from '../scripts.js';
import type { RedisConnection, ResetSubscriber, ScriptReply } from './connection.js';
import { EmittingConnection, runBySha } from './emitting-connection.js';
import { FunctionLibraries, type ScriptCalls } from './function-libraries.js';

/** The part of an ioredis (or iovalkey, its fork) Redis or Cluster client the adapter uses. */
export interface IoredisLike {
  readonly status: string;
  readonly isCluster?: boolean;
  /** The client's own `callBuffer` (the part of ioredis's API sluice calls). */
  callBuffer(command: string, ...args: Array<string | Buffer | number>): Promise<unknown>;
  /** A Cluster's own `nodes` (the part of ioredis's API sluice calls). */
  nodes?(role: 'master'): IoredisLike[];
  /** The client's own `del` (the part of ioredis's API sluice calls). */
  del(...keys: string[]): Promise<number>;
  /** The client's own `exists` (the part of ioredis's API sluice calls). */
  exists(key: string): Promise<number>;
  /** The client's own `publish` (the part of ioredis's API sluice calls). */
  publish(channel: string, message: string): Promise<number>;
  /**
   * The client's own `duplicate` (the part of ioredis's API sluice calls): a standalone client's takes option
   * overrides, a Cluster's is called bare.
   */
  duplicate(...override: unknown[]): IoredisLike;
  /** The client's own `subscribe` (the part of ioredis's API sluice calls). */
  subscribe(channel: string): Promise<unknown>;
  /** The client's own `unsubscribe` (the part of ioredis's API sluice calls). */
  unsubscribe(channel: string): Promise<unknown>;
  /** The client's own `disconnect` (the part of ioredis's API sluice calls). */
  disconnect(): void;
  /** The client's own `connect` (the part of ioredis's API sluice calls). */
  connect(): Promise<void>;
  /** The client's own `on` (the part of ioredis's API sluice calls). */
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  /** The client's own `off` (the part of ioredis's API sluice calls). */
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** ioredis internals the adapter reads (not in its public types): the pending reconnect, subscriber mode. */
interface IoredisInternals {
  /** Set while it waits out its reconnect backoff; cleared by disconnect(). */
  reconnectTimeout?: ReturnType<typeof setTimeout> | null;
  /** `subscriber` is set while a standalone client is in subscriber mode. */
  readonly condition?: { readonly subscriber?: unknown } | null;
}

/** True while a standalone ioredis client is in subscriber mode (it can then run nothing but (un)subscribe). */
export function ioredisSubscribed(client: IoredisLike): boolean {
  const subscriber = (client as IoredisLike & IoredisInternals).condition?.subscriber;
  return subscriber !== undefined && subscriber !== null && subscriber !== false;
}

/** ioredis 5/6 and iovalkey: `callBuffer`, `duplicate` and a `status` string. */
export function isIoredisLike(value: unknown): value is IoredisLike {
  const v = value as Partial<IoredisLike> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.callBuffer === 'function' &&
    typeof v.duplicate === 'function' &&
    typeof v.status === 'string'
  );
}

/**
 * The reconnect nudge for ioredis: it replaces the client's pending reconnect timer (cleared, and the attempt
 * it would have made made now), so there is still exactly one reconnect loop. Calling connect() while the
 * timer is pending would start a second one. A client that is connected, connecting, or closed by its owner
 * (disconnect() clears the timer) is left alone.
 */
export function nudgeIoredis(client: IoredisLike): void {
  const c = client as IoredisLike & IoredisInternals;
  if (c.status !== 'reconnecting' || c.reconnectTimeout === undefined || c.reconnectTimeout === null) return;
  clearTimeout(c.reconnectTimeout);
  c.reconnectTimeout = null;
  client.connect().catch(() => {
    // Refused again: the client schedules its next attempt itself, as after any failed attempt.
  });
}

/** An ioredis or iovalkey client as a RedisConnection. */
export class IoredisConnection extends EmittingConnection<IoredisLike> implements RedisConnection {
  readonly description: string;
  readonly isCluster: boolean;
  readonly functions = new FunctionLibraries();
  readonly #calls: ScriptCalls = {
    fcall: (name, keys, args) => this.client.callBuffer('FCALL', name, keys.length, ...keys, ...args),
    load: (library) => {
      const primaries = this.isCluster && this.client.nodes ? this.client.nodes('master') : [this.client];
      // A Cluster client that has not read its slots yet knows no primary: try again later.
      if (primaries.length === 0) return Promise.reject(new Error('no Cluster primary known yet'));
      return Promise.all(primaries.map((node) => node.callBuffer('FUNCTION', 'LOAD', 'REPLACE', library)));
    },
    bySource: (script, keys, args) =>
      this.client.callBuffer('EVAL', script.source, keys.length, ...keys, ...args) as Promise<ScriptReply>,
    bySha: (script, keys, args) =>
      runBySha((bySource) =>
        bySource
          ? this.client.callBuffer('EVAL', script.source, keys.length, ...keys, ...args)
          : this.client.callBuffer('EVALSHA', script.sha1, keys.length, ...keys, ...args),
      ),
  };

  constructor(client: IoredisLike, library: string) {
    super(client);
    this.isCluster = client.isCluster === true;
    this.description = `${library} ${this.isCluster ? 'Cluster' : 'client'}`;
  }

  runScript(script: LuaScript, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<ScriptReply> {
    return this.functions.run(this.#calls, script, keys, args);
  }

  async del(keys: readonly string[]): Promise<void> {
    await this.client.del(...keys);
  }

  async info(section: string): Promise<string> {
    const node = this.isCluster && this.client.nodes ? this.client.nodes('master')[0] : this.client;
    if (node === undefined) throw new Error('no Cluster primary known yet');
    return String(await node.callBuffer('INFO', section));
  }

  /**
   * A standalone client re-subscribes after a reconnect by the store's hand, not by ioredis's: ioredis does
   * not handle the promise of its own re-subscription, so a store closed before Redis answered it left an
   * unhandled rejection ("Connection is closed"), which ends a Node process by default. (A Cluster client's
   * subscriber handles its own.)
   */
  subscriber(onMessage: (channel: string, message: string) => void): ResetSubscriber {
    const cluster = this.isCluster;
    const connection = this.subscriberConnection(
      cluster ? this.client.duplicate() : this.client.duplicate({ autoResubscribe: false }),
    );
    connection.on('message', onMessage as (...args: unknown[]) => void);
    const channels = new Set<string>();
    let connectedBefore = false;
    if (!cluster)
      connection.on('ready', () => {
        if (connectedBefore)
          for (const channel of channels)
            connection.subscribe(channel).catch(() => {
              // Lost again before the answer: tried at the next reconnect; closed: nothing to keep.
            });
        connectedBefore = true;
      });
    return {
      subscribe: async (channel) => {
        channels.add(channel);
        await connection.subscribe(channel);
      },
      unsubscribe: async (channel) => {
        channels.delete(channel);
        await connection.unsubscribe(channel);
      },
      close: async () => connection.disconnect(),
    };
  }

  get connected(): boolean {
    return this.client.status === 'ready';
  }

  nudgeReconnect(): void {
    nudgeIoredis(this.client);
  }
}
