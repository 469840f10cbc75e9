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
 * How long later calls wait for a library's load, or a script's first call by sha1, before they leave anyway:
 * a load can hang on a primary that is away (a Cluster failing over) while the other primaries answer.
 */
export const LOAD_WAIT_MS = 1000;

/**
 * A connection's function libraries: which of sluice's scripts this server runs as functions (FCALL), so a
 * call skips defining every helper of the script again (EVAL's cost). A server without functions (Redis 6) or
 * a user the ACL denies them runs every script by sha1: functions only ever save time, no call fails for them.
 *
 * Calls reach the server in the order they were asked, as one connection's commands do: a caller that sends a
 * grant and then a peek of the same key reads its own grant. Two things could reorder them, and both are held
 * back here: a call by sha1 the server does not know yet (NOSCRIPT) is sent again after calls asked behind
 * it, and a call by sha1 while its library loads runs after an FCALL of another, loaded library asked later.
 * So while a library loads (its first use, or after the server lost it) and while a script's first call by
 * sha1 is on its way, every later call of the connection waits, in order, and leaves when that settles or
 * LOAD_WAIT_MS has passed. Left unordered: calls in flight when the server loses its scripts (a restart,
 * SCRIPT FLUSH), and on a Cluster without functions a script's first call on each other primary.
 */
export class FunctionLibraries {
  #available = true;
  readonly #loaded = new Set<string>();
  readonly #loading = new Set<string>();
  /** When a library whose load failed may be tried again (performance.now()). */
  readonly #retryAt = new Map<string, number>();
  /** The sha1s of the scripts the server has run by sha1 for this connection. */
  readonly #cached = new Set<string>();
  /** Pending while a load or a script's first call by sha1 is on its way: later calls wait for it. */
  #gate: Promise<void> | undefined;

  /** False once the server answered that it runs no functions for this connection. */
  get available(): boolean {
    return this.#available;
  }

  /** Runs `script` through `calls`: by FCALL when its library is loaded (loading it first), else by sha1. */
  run(
    calls: ScriptCalls,
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply> {
    if (this.#gate !== undefined) return this.#gate.then(() => this.run(calls, script, keys, args));
    if (this.#available) {
      if (this.#loaded.has(script.functionName)) return this.#fcall(calls, script, keys, args);
      const name = script.functionName;
      // A load still on its way after LOAD_WAIT_MS is not asked again: its calls go by sha1 meanwhile.
      if (!this.#loading.has(name) && performance.now() >= (this.#retryAt.get(name) ?? 0)) {
        this.#hold(this.#load(calls, script), LOAD_WAIT_MS);
        return this.run(calls, script, keys, args);
      }
    }
    const reply = calls.bySha(script, keys, args);
    if (!this.#cached.has(script.sha1))
      this.#hold(
        reply.then(() => void this.#cached.add(script.sha1)),
        LOAD_WAIT_MS,
      );
    return reply;
  }

  async #fcall(
    calls: ScriptCalls,
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply> {
    try {
      return (await calls.fcall(script.functionName, keys, args)) as ScriptReply;
    } catch (error) {
      const message = messageOf(error);
      if (NOT_FOUND.test(message)) this.#loaded.delete(script.functionName);
      else if (NO_FUNCTIONS.test(message)) this.#available = false;
      else throw error;
      return this.run(calls, script, keys, args);
    }
  }

  /** Later calls wait until `work` settles or `maxMs` passes. */
  #hold(work: Promise<unknown>, maxMs: number): void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bounded = Promise.race([
      work,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, maxMs);
        timer.unref?.();
      }),
    ]);
    const gate: Promise<void> = bounded.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
    this.#gate = gate;
    // Registered before any waiter, so it runs first: the waiters then send, in order, with no gate.
    void gate.then(() => {
      if (this.#gate === gate) this.#gate = undefined;
    });
  }

  #load(calls: ScriptCalls, script: LuaScript): Promise<void> {
    const name = script.functionName;
    this.#loading.add(name);
    return calls.load(script.library).then(
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
