import type { LuaScript } from '../scripts.js';
import type { ScriptReply } from './connection.js';

/** How one adapter runs a script: as a function, by its source or sha1 (EVAL, EVALSHA), and loads libraries. */
export interface ScriptCalls {
  /** FCALL of `name`, routed by `keys` on a Cluster. */
  fcall(name: string, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<unknown>;
  /** FUNCTION LOAD REPLACE of `library` on every primary (replicas get it from their primary). */
  load(library: string): Promise<unknown>;
  /** EVAL of the source: runs the script and leaves it in the server's script cache. */
  bySource(script: LuaScript, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<ScriptReply>;
  /** EVALSHA, and on NOSCRIPT the source. */
  bySha(script: LuaScript, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<ScriptReply>;
}

/** How long a library whose load failed for a passing reason (a lost connection) runs by sha1 before the next try. */
export const RELOAD_AFTER_MS = 1000;

/** The server has no functions (before Redis 7), or this user may not load or call them (ACL). */
const NO_FUNCTIONS = /^(NOPERM|ERR unknown (sub)?command)/;
/** The server lost the library: a restart without persistence, FUNCTION FLUSH, a new primary, another version's REPLACE. */
const NOT_FOUND = /^ERR Function not found/;
/** Redis refused the library itself (it cannot register it); LOADING, READONLY, CLUSTERDOWN and lost connections pass. */
const REFUSED = /^ERR /;

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : '');

/**
 * A connection's function libraries: which of sluice's scripts this server runs as functions (FCALL), so a
 * call skips defining every helper of the script again (EVAL's cost). A script runs by EVAL/EVALSHA until its
 * library is loaded (in the background, on its first use, on every primary), then by FCALL; when the server
 * lost it, the call that met the loss runs by sha1 and the library is loaded again. A server without functions
 * (Redis 6) or a user the ACL denies them runs every script by sha1: functions only ever save time, no call
 * fails for them, and no call waits for a load.
 *
 * Calls reach the server in the order they were asked, as one connection's commands do: a caller that sends a
 * grant and then a peek of the same key reads its own grant. So a script's first call on a connection sends
 * its source (EVAL), never EVALSHA: an EVALSHA the server does not know comes back NOSCRIPT and is sent again,
 * after calls asked behind it (a clean-clone CI run met that: a peek sent by FCALL of a loaded library read no
 * grant). Once an EVAL of a script has run, the server holds it, and later calls send its sha1. Left
 * unordered: calls in flight when the server loses its scripts (a restart, SCRIPT FLUSH), and on a Cluster a
 * script's first EVALSHA on each other primary.
 */
export class FunctionLibraries {
  #available = true;
  readonly #loaded = new Set<string>();
  readonly #loading = new Set<string>();
  /** When a library whose load failed may be tried again (performance.now()). */
  readonly #retryAt = new Map<string, number>();
  /** The sha1s of the scripts an EVAL of this connection has run: the server holds them since. */
  readonly #sent = new Set<string>();

  /** False once the server answered that it runs no functions for this connection. */
  get available(): boolean {
    return this.#available;
  }

  /** Runs `script` through `calls`: by FCALL when its library is loaded, else by source or sha1 (and loads it). */
  async run(
    calls: ScriptCalls,
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply> {
    const name = script.functionName;
    if (!this.#available || !this.#loaded.has(name)) {
      if (this.#available) this.#load(calls, script);
      return this.#byScript(calls, script, keys, args);
    }
    try {
      return (await calls.fcall(name, keys, args)) as ScriptReply;
    } catch (error) {
      const message = messageOf(error);
      if (NOT_FOUND.test(message)) {
        this.#loaded.delete(name);
        this.#load(calls, script);
      } else if (NO_FUNCTIONS.test(message)) {
        this.#available = false;
      } else {
        throw error;
      }
      return this.#byScript(calls, script, keys, args);
    }
  }

  /** By source the first time on this connection, by sha1 once an EVAL of it ran (see the class's comment). */
  #byScript(
    calls: ScriptCalls,
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply> {
    if (this.#sent.has(script.sha1)) return calls.bySha(script, keys, args);
    // Known only once an EVAL of it ran: until then every call sends the source. A refused EVAL (an ACL
    // without it, a lost connection) loaded nothing, and an EVALSHA after it would meet NOSCRIPT.
    const reply = calls.bySource(script, keys, args);
    reply.then(
      () => this.#sent.add(script.sha1),
      () => undefined,
    );
    return reply;
  }

  #load(calls: ScriptCalls, script: LuaScript): void {
    const name = script.functionName;
    if (this.#loading.has(name) || performance.now() < (this.#retryAt.get(name) ?? 0)) return;
    this.#loading.add(name);
    let loading: Promise<unknown>;
    try {
      loading = calls.load(script.library);
    } catch (error) {
      loading = Promise.reject(error);
    }
    loading.then(
      () => {
        this.#loading.delete(name);
        this.#retryAt.delete(name);
        this.#loaded.add(name);
      },
      (error: unknown) => {
        this.#loading.delete(name);
        const message = messageOf(error);
        // A refusal (no FUNCTION command, the ACL, a library it cannot register) holds for this server: its
        // scripts run by sha1. Anything else (a dropped connection, a server loading) is tried again later.
        if (NO_FUNCTIONS.test(message) || REFUSED.test(message)) this.#available = false;
        else this.#retryAt.set(name, performance.now() + RELOAD_AFTER_MS);
      },
    );
  }
}
