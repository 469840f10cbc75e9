import { SluiceError } from '@sluice/core';
import calculateSlot from 'cluster-key-slot';
import type { RedisConnection } from './connection/connection.js';
import { evictionSettings, evicts, warnEvicting, warnMisconfigured } from './config-checks.js';
import { stateKey } from './key-layout.js';
import { misconfiguration } from './misconfiguration.js';
import { type LuaScript, luaScript, redisLuaFile } from './scripts.js';
import { OPERATIONS_DEADLINE_MS, withDeadline } from '@sluice/core/internal';

/** A start-up check may wait out a client's first connection: far longer than a decision's deadline. */
const PREFLIGHT_MIN_DEADLINE_MS = OPERATIONS_DEADLINE_MS;
const IDENTITY = 'sluice-preflight';

/**
 * The commands a script runs: every redis.call / redis.pcall in its source, lower case, each once.
 * @example
 * commandsOf([decideScript(['fixedWindow'])]) // the commands its ACL user needs, e.g. ['mget', 'set', ...]
 */
export function commandsOf(scripts: readonly LuaScript[]): string[] {
  const commands = new Set<string>();
  for (const script of scripts)
    for (const m of script.source.matchAll(/redis\.p?call\(\s*'(\w+)'/g)) commands.add((m[1] as string).toLowerCase());
  return [...commands].sort();
}

/** The keys preflight.lua works on: three of one slot under `prefix`, and for a standalone client one of another slot. */
function preflightKeys(prefix: string, cluster: boolean): string[] {
  const keys = ['s', 'z', 'h'].map((kind) => stateKey(prefix, IDENTITY, `check-${kind}`));
  if (cluster) return keys;
  const slot = calculateSlot(keys[0] as string);
  let other = 0;
  while (calculateSlot(stateKey(prefix, `${IDENTITY}-${other}`, 'check-s')) === slot) other++;
  return [...keys, stateKey(prefix, `${IDENTITY}-${other}`, 'check-s')];
}

/**
 * One start-up check of a store for one limiter prefix: runs the commands of `scripts` on keys under the
 * prefix (by EVALSHA, as decisions do), and on a standalone client across two slots. Resolves when the
 * store can work; rejects with SluiceError 'STORE_MISCONFIGURED' saying what is wrong (a missing permission,
 * named; a client whose mode is not the server's), or 'STORE_UNAVAILABLE' when Redis did not answer.
 * @example
 * await preflight(connection, 'api', [decideScript(['fixedWindow'])], 50) // rejects with STORE_MISCONFIGURED
 */
export async function preflight(
  connection: RedisConnection,
  prefix: string,
  scripts: readonly LuaScript[],
  timeoutMs: number,
): Promise<void> {
  const what = `the start-up check of limiter ${JSON.stringify(prefix)}`;
  // A client that cannot connect never runs the command: it queues it and emits errors saying why. A Cluster
  // client on a standalone server says it is misconfigured; a refused or reset connection says Redis is away
  // now, which is the check's answer (STORE_UNAVAILABLE) rather than a wait for its deadline.
  let stopWatching = (): void => {};
  const refused = new Promise<never>((_, reject) => {
    stopWatching = connection.watch(reject, () => {});
  });
  try {
    const script = luaScript('preflight', [redisLuaFile('preflight')]);
    const check = connection.runScript(script, preflightKeys(prefix, connection.isCluster), commandsOf(scripts));
    await withDeadline(Promise.race([check, refused]), Math.max(timeoutMs, PREFLIGHT_MIN_DEADLINE_MS), what);
  } catch (error) {
    const why = misconfiguration(error, connection);
    if (why !== undefined)
      throw new SluiceError(
        'STORE_MISCONFIGURED',
        `limiter ${JSON.stringify(prefix)} on a ${connection.description}: ${why}`,
        { cause: error },
      );
    const message = error instanceof Error ? error.message : String(error);
    throw new SluiceError('STORE_UNAVAILABLE', `${what} could not run: ${message}`, { cause: error });
  } finally {
    stopWatching();
  }
}

interface Check {
  readonly prefix: string;
  readonly scripts: readonly LuaScript[];
  result: Promise<void>;
}

/**
 * The start-up checks of one store, one per limiter prefix bound to it, started at bind. A misconfiguration
 * is reported at once: a process warning (once per client, so it shows at start-up with no listener), and
 * `onMisconfigured` (the store's 'store-error'); `ready()`
 * waits for every check and rejects with the first failure. A check Redis could not answer is run again by
 * the next `ready()`.
 * @example
 * const checks = new StartupChecks(connection, 50, (e) => emitSafely(store, 'store-error', e))
 * checks.add(prefix, [decideScript(['fixedWindow'])])
 * await checks.ready()
 */
export class StartupChecks {
  readonly #connection: RedisConnection;
  readonly #timeoutMs: number;
  readonly #onMisconfigured: (error: SluiceError) => void;
  readonly #checks = new Map<string, Check>();
  /** What was said already: a permission several checks of one prefix lack is said once. */
  readonly #said = new Set<string>();
  /** The server's eviction policy, read once per store at its first check; it never fails. */
  #eviction: Promise<void> | undefined;

  constructor(connection: RedisConnection, timeoutMs: number, onMisconfigured: (error: SluiceError) => void) {
    this.#connection = connection;
    this.#timeoutMs = timeoutMs;
    this.#onMisconfigured = onMisconfigured;
  }

  /**
   * Checks `scripts` on keys under `prefix`, once per `id` (a prefix's rate limiters and its concurrency
   * limiter run different scripts: each is checked).
   */
  add(prefix: string, scripts: readonly LuaScript[], id = prefix): void {
    if (this.#checks.has(id)) return;
    const check: Check = { prefix, scripts, result: Promise.resolve() };
    check.result = this.#run(check);
    this.#checks.set(id, check);
    this.#eviction ??= this.#checkEviction();
  }

  /** A Redis that may evict limiter keys is said at start-up (SLUICE_EVICTING_REDIS); one that will not say is skipped. */
  async #checkEviction(): Promise<void> {
    const settings = await withDeadline(
      evictionSettings(this.#connection),
      Math.max(this.#timeoutMs, PREFLIGHT_MIN_DEADLINE_MS),
      'reading the eviction policy',
    ).catch(() => undefined);
    if (settings !== undefined && evicts(settings)) warnEvicting(settings, this.#connection.description);
  }

  /** Forgets the checks registered under `id` (a limiter that closed). */
  remove(id: string): void {
    this.#checks.delete(id);
  }

  #run(check: Check): Promise<void> {
    const result = preflight(this.#connection, check.prefix, check.scripts, this.#timeoutMs);
    result.catch((error: unknown) => {
      if (!(error instanceof SluiceError) || error.code !== 'STORE_MISCONFIGURED') return;
      if (this.#said.has(error.message)) return;
      this.#said.add(error.message);
      warnMisconfigured(error.message);
      this.#onMisconfigured(error);
    });
    return result;
  }

  /**
   * Resolves once every registered check passed (and the eviction policy was read, warned about if it can drop
   * limiter keys); rejects with STORE_MISCONFIGURED or STORE_UNAVAILABLE.
   */
  async ready(): Promise<void> {
    await this.#eviction;
    await Promise.all(
      [...this.#checks.values()].map((check) =>
        check.result.catch((error: unknown) => {
          if (!(error instanceof SluiceError) || error.code !== 'STORE_UNAVAILABLE') throw error;
          check.result = this.#run(check);
          return check.result;
        }),
      ),
    );
  }
}
