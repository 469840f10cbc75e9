import type { LuaScript } from '../scripts.js';
import type { RedisConnection, ResetSubscriber, ScriptReply } from './connection.js';
import { EmittingConnection, runBySha } from './emitting-connection.js';
import { FunctionLibraries, type ScriptCalls } from './function-libraries.js';

interface ScriptArgs {
  keys: string[];
  arguments: Array<string | Buffer>;
}

/** The part of a node-redis 5/6 client (`createClient`) or cluster (`createCluster`) the adapter uses. */
export interface NodeRedisLike {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  readonly isPubSubActive?: boolean;
  /** The client's own `withTypeMapping` (the part of node-redis's API sluice calls). */
  withTypeMapping(mapping: Record<number, unknown>): NodeRedisLike;
  /** The client's own `withCommandOptions` (the part of node-redis's API sluice calls). */
  withCommandOptions?(options: { typeMapping: Record<number, unknown>; timeout: number }): NodeRedisLike;
  /** The client's own `evalSha` (the part of node-redis's API sluice calls). */
  evalSha(sha1: string, options: ScriptArgs): Promise<unknown>;
  /** The client's own `eval` (the part of node-redis's API sluice calls). */
  eval(source: string, options: ScriptArgs): Promise<unknown>;
  /** The client's own `fCall` (the part of node-redis's API sluice calls). */
  fCall(name: string, options: ScriptArgs): Promise<unknown>;
  /** A client's own `sendCommand` (the part of node-redis's API sluice calls; a cluster's takes a routing key). */
  sendCommand(...args: unknown[]): Promise<unknown>;
  /** A cluster's own `masters` (the part of node-redis's API sluice calls). */
  readonly masters?: readonly object[];
  /** A cluster's own `nodeClient` (the part of node-redis's API sluice calls). */
  nodeClient?(node: object): Promise<NodeRedisLike>;
  /** The client's own `del` (the part of node-redis's API sluice calls). */
  del(keys: string[]): Promise<number>;
  /** The client's own `exists` (the part of node-redis's API sluice calls). */
  exists(key: string): Promise<number>;
  /** The client's own `publish` (the part of node-redis's API sluice calls). */
  publish(channel: string, message: string): Promise<number>;
  /** The client's own `duplicate` (the part of node-redis's API sluice calls). */
  duplicate(): NodeRedisLike;
  /** The client's own `connect` (the part of node-redis's API sluice calls). */
  connect(): Promise<unknown>;
  /** The client's own `subscribe` (the part of node-redis's API sluice calls). */
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<void>;
  /** The client's own `unsubscribe` (the part of node-redis's API sluice calls). */
  unsubscribe(channel: string): Promise<void>;
  /** The client's own `destroy` (the part of node-redis's API sluice calls). */
  destroy?(): void;
  /** The client's own `disconnect` (the part of node-redis's API sluice calls). */
  disconnect?(): Promise<void>;
  /** The client's own `on` (the part of node-redis's API sluice calls). */
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  /** The client's own `off` (the part of node-redis's API sluice calls). */
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  /** Only on a cluster. */
  getSlotMaster?: unknown;
}

/** node-redis internals the adapter reads (not in its public types): a cluster's slot map. */
interface NodeRedisInternals {
  readonly _slots?: { rediscover?(startWith: undefined): Promise<unknown> };
}

/** node-redis: `evalSha` and `withTypeMapping` (RESP3-era clients, v5 and later). */
export function isNodeRedisLike(value: unknown): value is NodeRedisLike {
  const v = value as Partial<NodeRedisLike> | null;
  return (
    typeof v === 'object' && v !== null && typeof v.evalSha === 'function' && typeof v.withTypeMapping === 'function'
  );
}

/** RESP_TYPES.BLOB_STRING of node-redis ('$'): mapped to Buffer, so packed binary replies arrive intact. */
const BLOB_STRING = 36;

/**
 * A node-redis client or cluster as a RedisConnection. Replies come through a view of the client that maps
 * bulk strings to Buffers (`withTypeMapping`), the client itself is untouched. node-redis reconnects on its
 * own schedule (`socket.reconnectStrategy`), which a nudge cannot shorten: nudgeReconnect is a no-op.
 */
export class NodeRedisConnection extends EmittingConnection<NodeRedisLike> implements RedisConnection {
  readonly description: string;
  readonly isCluster: boolean;
  readonly #binary: NodeRedisLike;
  /** Whether the client was ready once: not ready after that, it is reconnecting. */
  #wasReady = false;
  readonly functions = new FunctionLibraries();
  readonly #calls: ScriptCalls = {
    fcall: (name, keys, args) => this.#binary.fCall(name, { keys: [...keys], arguments: [...args] }),
    load: async (library) => {
      const command = ['FUNCTION', 'LOAD', 'REPLACE', library];
      const { masters, nodeClient } = this.client;
      if (!this.isCluster || masters === undefined || nodeClient === undefined) return this.client.sendCommand(command);
      // A cluster that has not read its slots yet knows no primary: try again later.
      if (masters.length === 0) throw new Error('no cluster primary known yet');
      return Promise.all(
        masters.map(async (master) => (await nodeClient.call(this.client, master)).sendCommand(command)),
      );
    },
    bySource: (script, keys, args) =>
      this.#binary.eval(script.source, { keys: [...keys], arguments: [...args] }) as Promise<ScriptReply>,
    bySha: (script, keys, args) => {
      const options = { keys: [...keys], arguments: [...args] };
      return runBySha((bySource) =>
        bySource ? this.#binary.eval(script.source, options) : this.#binary.evalSha(script.sha1, options),
      );
    },
  };

  constructor(client: NodeRedisLike) {
    super(client);
    this.isCluster = client.getSlotMaster !== undefined;
    this.description = `node-redis ${this.isCluster ? 'cluster' : 'client'}`;
    // node-redis 6 gives every command an AbortSignal timer of its own (5 s unless configured): 1.8-3.3 us of
    // client CPU per call. sluice bounds each of its calls itself (timeoutMs), so its view turns that off.
    const typeMapping = { [BLOB_STRING]: Buffer };
    this.#binary = client.withCommandOptions?.({ typeMapping, timeout: 0 }) ?? client.withTypeMapping(typeMapping);
  }

  async info(section: string): Promise<string> {
    const command = ['INFO', section];
    const { masters, nodeClient } = this.client;
    if (!this.isCluster || masters === undefined || nodeClient === undefined)
      return String(await this.client.sendCommand(command));
    const first = masters[0];
    if (first === undefined) throw new Error('no cluster primary known yet');
    return String(await (await nodeClient.call(this.client, first)).sendCommand(command));
  }

  runScript(script: LuaScript, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<ScriptReply> {
    // A client that lost its connection would queue the call until it reconnects (its offline queue), and
    // run it then: a decision answered by the fail mode long before would be counted again, late, and the
    // queue would grow for as long as Redis is away. Refused at once instead: the fail mode answers now. A
    // client still making its first connection is waited for (its queue holds what was asked meanwhile).
    if (this.client.isReady === true) this.#wasReady = true;
    else if (this.#wasReady && !this.isCluster && this.client.isOpen)
      return Promise.reject(new Error('node-redis client is reconnecting: the call was not queued'));
    return this.functions.run(this.#calls, script, keys, args);
  }

  async del(keys: readonly string[]): Promise<void> {
    await this.client.del([...keys]);
  }

  subscriber(onMessage: (channel: string, message: string) => void): ResetSubscriber {
    const connection = this.subscriberConnection(this.client.duplicate());
    let opened: Promise<unknown> | undefined;
    const open = () => (opened ??= connection.connect());
    const listener = (message: string, channel: string) => onMessage(channel, message);
    return {
      subscribe: async (channel) => {
        await open();
        await connection.subscribe(channel, listener);
      },
      unsubscribe: async (channel) => {
        if (opened !== undefined) await connection.unsubscribe(channel);
      },
      close: async () => {
        if (opened === undefined) return;
        await opened.catch(() => undefined);
        if (typeof connection.destroy === 'function') connection.destroy();
        else await connection.disconnect?.();
      },
    };
  }

  get connected(): boolean {
    return this.client.isReady ?? this.client.isOpen;
  }

  nudgeReconnect(): void {
    // node-redis owns each node's reconnect schedule and offers no way to move it forward. A cluster can be
    // asked to read the topology again (after a failover the dead master's slots are served by a promoted
    // replica it would otherwise not look for); node-redis runs one such refresh at a time.
    const slots = (this.client as NodeRedisLike & NodeRedisInternals)._slots;
    if (this.isCluster && typeof slots?.rediscover === 'function') slots.rediscover(undefined).catch(() => {});
  }
}
