import type { LuaScript } from '../scripts.js';
import type { RedisConnection, ResetSubscriber, ScriptReply } from './connection.js';
import { FunctionLibraries, type ScriptCalls } from './function-libraries.js';

/** The part of a Valkey GLIDE 2 client (`GlideClient`, `GlideClusterClient`) the adapter uses. */
export interface GlideLike {
  /** The client's own `invokeScript` (the part of GLIDE's API sluice calls). */
  invokeScript(
    script: object,
    options: { keys: string[]; args: Array<string | Buffer>; decoder: number },
  ): Promise<unknown>;
  /** The client's own `fcall` (the part of GLIDE's API sluice calls). */
  fcall(name: string, keys: string[], args: Array<string | Buffer>, options: { decoder: number }): Promise<unknown>;
  /** The client's own `functionLoad` (the part of GLIDE's API sluice calls). */
  functionLoad(library: string, options: { replace: boolean; route?: 'allPrimaries' }): Promise<unknown>;
  /** The client's own `customCommand` (the part of GLIDE's API sluice calls). */
  customCommand(args: Array<string | Buffer>, options?: { decoder: number }): Promise<unknown>;
  /** The client's own `del` (the part of GLIDE's API sluice calls). */
  del(keys: string[]): Promise<number>;
  /** The client's own `exists` (the part of GLIDE's API sluice calls). */
  exists(keys: string[]): Promise<number>;
  /** The client's own `publish` (the part of GLIDE's API sluice calls). */
  publish(message: string, channel: string): Promise<number>;
  /** The client's own `subscribeLazy` (the part of GLIDE's API sluice calls). */
  subscribeLazy?(channels: Iterable<string>): Promise<void>;
  /** The client's own `unsubscribeLazy` (the part of GLIDE's API sluice calls). */
  unsubscribeLazy?(channels: Iterable<string>): Promise<void>;
  /** The client's own `close` (the part of GLIDE's API sluice calls). */
  close(): void;
  /** Only on a cluster client. */
  invokeScriptWithRoute?: unknown;
}

/** GLIDE internals the adapter reads (protected in its types): whether it is closed, and its configuration. */
interface GlideInternals {
  readonly isClosed?: boolean;
  /** The configuration it was created with: the store makes its subscriber from it. */
  readonly config?: object;
}

/** True for a GLIDE client that was closed. */
export function glideClosed(client: GlideLike): boolean {
  return (client as GlideLike & GlideInternals).isClosed === true;
}

/** GLIDE: `invokeScript` and `customCommand`. */
export function isGlideLike(value: unknown): value is GlideLike {
  const v = value as Partial<GlideLike> | null;
  return (
    typeof v === 'object' && v !== null && typeof v.invokeScript === 'function' && typeof v.customCommand === 'function'
  );
}

interface GlideModule {
  Script: new (source: string) => object;
  Decoder: { Bytes: number };
}

interface GlideClass {
  createClient(config: object): Promise<GlideLike>;
}

/** GLIDE's own Script and Decoder, loaded only when a GLIDE client is in use (it is an optional peer). */
let glideModule: Promise<GlideModule> | undefined;
const loadGlide = (): Promise<GlideModule> =>
  (glideModule ??= import('@valkey/valkey-glide') as unknown as Promise<GlideModule>);

/** Redis's own error codes, by the kind names GLIDE's core puts in their place. */
const REDIS_ERROR_CODES: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  PermissionDenied: 'NOPERM',
  CrossSlot: 'CROSSSLOT',
  Moved: 'MOVED',
  Ask: 'ASK',
  ClusterDown: 'CLUSTERDOWN',
  TryAgain: 'TRYAGAIN',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  MasterDown: 'MASTERDOWN',
  NoScriptError: 'NOSCRIPT',
  ExecAbortError: 'EXECABORT',
};

/**
 * A GLIDE error with Redis's own reply text: GLIDE reports "NOPERM x" as "An error was signalled by the
 * server: - PermissionDenied: x" (and CROSSSLOT as "- CrossSlot: ..."), where every other client, and the
 * store's classifiers (key-scoped errors, misconfiguration), read the reply as Redis sent it.
 */
export function redisReplyError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const m = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/.exec(error.message);
  const code = m === null ? undefined : REDIS_ERROR_CODES[m[1] as string];
  if (m === null || code === undefined) return error;
  const rest = m[2] as string;
  // A ResponseError keeps its own code when the text has one ("ERR ...", "BUSY ..."); "user_script:1: boom" had ERR.
  const message = code === 'ERR' && /^[A-Z]{3,}\b/.test(rest) ? rest : `${code} ${rest}`;
  return Object.assign(new Error(message, { cause: error }), { name: error.name });
}

const nativeError = (error: unknown): never => {
  throw redisReplyError(error);
};

/**
 * A GLIDE client as a RedisConnection. GLIDE runs scripts by its own Script objects (it keeps the sha and
 * loads on NOSCRIPT itself) and reconnects in its Rust core on its own schedule, with no connection events:
 * failures arrive per command, and nudgeReconnect is a no-op. The reset subscriber is a second client
 * created from the user's client's configuration, with a pub/sub callback.
 */
export class GlideConnection implements RedisConnection {
  readonly description: string;
  readonly isCluster: boolean;
  readonly #scripts = new Map<string, object>();
  readonly functions = new FunctionLibraries();
  /** Each call's error in Redis's own words, as FunctionLibraries and the store read them (NOPERM, Function not found). */
  readonly #calls: ScriptCalls = {
    fcall: async (name, keys, args) =>
      this.client.fcall(name, [...keys], [...args], { decoder: (await loadGlide()).Decoder.Bytes }).catch(nativeError),
    load: (library) =>
      this.client
        .functionLoad(library, this.isCluster ? { replace: true, route: 'allPrimaries' } : { replace: true })
        .catch(nativeError),
    bySource: async (script, keys, args) => {
      const { Decoder } = await loadGlide();
      const command = ['EVAL', script.source, String(keys.length), ...keys, ...args];
      return (await this.client.customCommand(command, { decoder: Decoder.Bytes }).catch(nativeError)) as ScriptReply;
    },
    bySha: async (script, keys, args) => {
      const glide = await loadGlide();
      let compiled = this.#scripts.get(script.sha1);
      if (compiled === undefined) {
        compiled = new glide.Script(script.source);
        this.#scripts.set(script.sha1, compiled);
      }
      const reply = this.client.invokeScript(compiled, {
        keys: [...keys],
        args: [...args],
        decoder: glide.Decoder.Bytes,
      });
      return (await reply.catch(nativeError)) as ScriptReply;
    },
  };

  constructor(readonly client: GlideLike) {
    this.isCluster = client.invokeScriptWithRoute !== undefined;
    this.description = `GLIDE ${this.isCluster ? 'cluster client' : 'client'}`;
  }

  runScript(script: LuaScript, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<ScriptReply> {
    return this.functions.run(this.#calls, script, keys, args);
  }

  async del(keys: readonly string[]): Promise<void> {
    await this.client.del([...keys]).catch(nativeError);
  }

  async exists(key: string): Promise<boolean> {
    return (await this.client.exists([key]).catch(nativeError)) > 0;
  }

  async info(section: string): Promise<string> {
    const reply = await this.client.customCommand(['INFO', section]).catch(nativeError);
    // A cluster client asks every node by INFO's default route and answers per node: any primary's will do.
    const one = (value: unknown): string => (Buffer.isBuffer(value) ? value.toString() : String(value));
    if (typeof reply === 'string' || Buffer.isBuffer(reply)) return one(reply);
    if (reply instanceof Map) return one(reply.values().next().value);
    if (Array.isArray(reply)) return one((reply[0] as { value?: unknown } | undefined)?.value ?? reply[0]);
    if (typeof reply === 'object' && reply !== null) return one(Object.values(reply)[0]);
    return one(reply);
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.client.publish(message, channel).catch(nativeError);
  }

  subscriber(onMessage: (channel: string, message: string) => void): ResetSubscriber | undefined {
    const config = (this.client as GlideLike & GlideInternals).config;
    const factory = this.client.constructor as unknown as Partial<GlideClass>;
    if (config === undefined || typeof factory.createClient !== 'function') return undefined;
    let created: Promise<GlideLike> | undefined;
    const open = () =>
      (created ??= (factory as GlideClass).createClient({
        ...config,
        pubsubSubscriptions: {
          channelsAndPatterns: {},
          callback: (msg: { channel: unknown; message: unknown }) =>
            onMessage(String(msg.channel), String(msg.message)),
        },
      }));
    return {
      subscribe: async (channel) => void (await (await open()).subscribeLazy?.([channel])),
      unsubscribe: async (channel) => {
        if (created !== undefined) await (await created).unsubscribeLazy?.([channel]);
      },
      close: async () => {
        if (created !== undefined) (await created.catch(() => undefined))?.close();
      },
    };
  }

  get connected(): boolean {
    return !glideClosed(this.client);
  }

  nudgeReconnect(): void {
    // GLIDE reconnects in its core on its own schedule.
  }

  watch(): () => void {
    // GLIDE has no connection events: failures arrive with the commands.
    return () => {};
  }
}
