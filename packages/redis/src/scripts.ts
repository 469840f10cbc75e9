import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AlgorithmKind } from '@sluice/core';

/** A Lua script as Redis sees it: the source sent by EVAL and the sha1 EVALSHA names it by. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
}

/** Each algorithm's file, and the files it needs before it. One file per algorithm: one copy of each. */
const ALGORITHM_FILES: Record<AlgorithmKind, readonly string[]> = {
  fixedWindow: ['fixed_window'],
  slidingWindowLog: ['sliding_window_log'],
  slidingWindowCounter: ['sliding_window_counter'],
  tokenBucket: ['token_bucket'],
  leakyBucket: ['leaky_bucket'],
  gcra: ['gcra'],
  smoothBursty: ['smooth_rate', 'smooth_bursty'],
  smoothWarmingUp: ['smooth_rate', 'smooth_warming_up'],
};

/**
 * A package's folder of .lua files: `src/lua` beside the module when run from source, or beside `dist/` when
 * built (the files ship in src/lua). `moduleUrl` is the caller's import.meta.url; `probe` a file it holds.
 */
export function luaDirectory(moduleUrl: string, probe: string): string {
  const here = dirname(fileURLToPath(moduleUrl));
  const candidates = [join(here, 'lua'), join(here, '..', 'src', 'lua'), join(here, '..', 'lua')];
  const found = candidates.find((dir) => existsSync(join(dir, probe)));
  if (!found) throw new Error(`Lua scripts not found in ${candidates.join(' or ')}`);
  return found;
}

const cache = new Map<string, LuaScript>();

/**
 * The one registry of Lua scripts: a script named `name`, composed of `files` (without `.lua`) from the
 * folder `directory`, in order, and kept; its sha1 is computed from exactly the text sent. Packages register
 * their own scripts through it (@sluice/hybrid its lease and heartbeat scripts); it knows none of them.
 */
export function luaScript(name: string, directory: string, files: readonly string[]): LuaScript {
  let script = cache.get(name);
  if (script === undefined) {
    const source = files.map((file) => readFileSync(join(directory, `${file}.lua`), 'utf8')).join('\n');
    script = { name, source, sha1: createHash('sha1').update(source).digest('hex') };
    cache.set(name, script);
  }
  return script;
}

let ownDirectory: string | undefined;
const redisLua = (): string => (ownDirectory ??= luaDirectory(import.meta.url, 'decide.lua'));

/** An entry script for a set of algorithms: the prelude, each algorithm's file once, then the entry. */
function compose(entry: 'decide' | 'refund', kinds: readonly AlgorithmKind[]): LuaScript {
  const wanted = [...new Set(kinds)].sort();
  const files = ['prelude', ...new Set(wanted.flatMap((kind) => ALGORITHM_FILES[kind])), entry];
  return luaScript(`${entry}:${wanted.join('+')}`, redisLua(), files);
}

/**
 * The decide script for a set of algorithms, so a limiter's script defines only the functions it runs.
 * Composed from the .lua files on first use and kept; its sha1 is computed from exactly the text sent.
 */
export function decideScript(kinds: readonly AlgorithmKind[] = Object.keys(ALGORITHM_FILES) as AlgorithmKind[]): LuaScript {
  return compose('decide', kinds);
}

/** The refund script for a set of refundable algorithms (see refund.lua). */
export function refundScript(kinds: readonly AlgorithmKind[]): LuaScript {
  return compose('refund', kinds);
}
