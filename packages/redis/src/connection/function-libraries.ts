import type { LuaScript } from '../scripts.js';
import type { ScriptReply } from './connection.js';

/** How one adapter runs a script: as a function, by its sha1 (EVALSHA, then EVAL on NOSCRIPT), and loads libraries. */
export interface ScriptCalls {
  /** FCALL of `name`, routed by `keys` on a Cluster. */
  fcall(name: string, keys: readonly string[], args: readonly (string | Buffer)[]): Promise<unknown>;
  /** FUNCTION LOAD REPLACE of `library` on every primary (replicas get it from their primary). */
  load(library: string): Promise<unknown>;
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
 * call skips defining every helper of the script again (EVAL's cost). A script runs by sha1 until its library
 * is loaded (loaded in the background on first use, on every primary), then by FCALL; when the server lost
 * it, the call that met the loss runs by sha1 and the library is loaded again. A server without functions
 * (Redis 6) or a user the ACL denies them runs every script by sha1, as before: functions only ever save
 * time, no call fails for them.
 */
export class FunctionLibraries {
  #available = true;
  readonly #loaded = new Set<string>();
  readonly #loading = new Set<string>();
  /** When a library whose load failed may be tried again (performance.now()). */
  readonly #retryAt = new Map<string, number>();

  /** False once the server answered that it runs no functions for this connection. */
  get available(): boolean {
    return this.#available;
  }

  /** Runs `script` through `calls`: by FCALL when its library is loaded, else by sha1 (and loads it). */
  async run(
    calls: ScriptCalls,
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply> {
    if (!this.#available) return calls.bySha(script, keys, args);
    if (!this.#loaded.has(script.functionName)) {
      this.#load(calls, script);
      return calls.bySha(script, keys, args);
    }
    try {
      return (await calls.fcall(script.functionName, keys, args)) as ScriptReply;
    } catch (error) {
      const message = messageOf(error);
      if (NOT_FOUND.test(message)) {
        this.#loaded.delete(script.functionName);
        this.#load(calls, script);
      } else if (NO_FUNCTIONS.test(message)) {
        this.#available = false;
      } else {
        throw error;
      }
      return calls.bySha(script, keys, args);
    }
  }

  #load(calls: ScriptCalls, script: LuaScript): void {
    const name = script.functionName;
    if (this.#loading.has(name) || performance.now() < (this.#retryAt.get(name) ?? 0)) return;
    this.#loading.add(name);
    calls.load(script.library).then(
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
