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
  /** False while the client knows it is not connected (see RedisConnection.connected). */
  connected(): boolean;
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
 * SCRIPT FLUSH), calls asked while the client knows it is disconnected (never held), and on a Cluster without
 * functions a script's first call on each other primary.
 */
export class FunctionLibraries {
  #available = true;
  readonly #loaded = new Set<string>();
  readonly #loading = new Set<string>();
  /** When a library whose load failed may be tried again (performance.now()). */
  readonly #retryAt = new Map<string, number>();
  /** The sha1s of the scripts the server has run by sha1 for this connection. */
  readonly #cached = new Set<string>();
  /** Loads and first calls by sha1 on their way: while any is, calls wait in #waiting. */
  #holding = 0;
  /** Calls asked while something was held, in the order asked; #waiting[#next] leaves first. */
  readonly #waiting: Array<() => void> = [];
  #next = 0;

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
    // A client that knows it is not connected would only queue the call: it leaves now, as before any load,
    // and fails (or waits in the client's queue) as the client decides. Holding it could send it long after
    // its caller gave up, to a server that has restarted meanwhile.
    if (!calls.connected()) return this.#send(calls, script, keys, args);
    const name = script.functionName;
    // A load still on its way after LOAD_WAIT_MS is not asked again: its calls go by sha1 meanwhile. Loads
    // start at once, side by side, even while other calls wait: a limiter's first calls need several.
    if (
      this.#available &&
      !this.#loaded.has(name) &&
      !this.#loading.has(name) &&
      performance.now() >= (this.#retryAt.get(name) ?? 0)
    )
      this.#hold(this.#load(calls, script));
    if (this.#holding === 0) return this.#send(calls, script, keys, args);
    return new Promise((resolve, reject) =>
      this.#waiting.push(() => this.#send(calls, script, keys, args).then(resolve, reject)),
    );
  }

  /** Sends one call now: by FCALL when its library is loaded, else by sha1 (held while the server may not know it). */
  #send(
    calls: ScriptCalls,
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<ScriptReply> {
    if (this.#available && this.#loaded.has(script.functionName)) return this.#fcall(calls, script, keys, args);
    const reply = calls.bySha(script, keys, args);
    // Held only where EVALSHA is how this server runs scripts: while a load that failed for a passing reason
    // (a lost connection) waits to be tried again, calls leave at once and fail as fast as the connection does.
    if (!this.#available && !this.#cached.has(script.sha1) && calls.connected())
      this.#hold(reply.then(() => void this.#cached.add(script.sha1)));
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

  /** Later calls wait until `work` settles or LOAD_WAIT_MS passes, then leave in the order asked. */
  #hold(work: Promise<unknown>): void {
    this.#holding++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      this.#holding--;
      this.#release();
    };
    const timer = setTimeout(release, LOAD_WAIT_MS);
    timer.unref?.();
    work.then(release, release);
  }

  /** Sends the waiting calls in order, until one of them holds the rest again. */
  #release(): void {
    while (this.#holding === 0 && this.#next < this.#waiting.length) (this.#waiting[this.#next++] as () => void)();
    if (this.#next === this.#waiting.length) {
      this.#waiting.length = 0;
      this.#next = 0;
    }
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
