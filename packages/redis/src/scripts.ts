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

/** The .lua files ship in src/lua: beside this module when run from source, beside dist/ when built. */
function luaDirectory(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'lua'), join(here, '..', 'src', 'lua')];
  const found = candidates.find((dir) => existsSync(join(dir, 'decide.lua')));
  if (!found) throw new Error(`@sluice/redis: Lua scripts not found in ${candidates.join(' or ')}`);
  return found;
}

const cache = new Map<string, LuaScript>();

/** The scripts of @sluice/hybrid: standalone files, loaded through this same registry and runner. */
export type HybridScriptName = 'lease' | 'lease_return' | 'heartbeat';

/** A hybrid-mode script (see the .lua file's header for its KEYS, ARGV and reply), after the clock helper. */
export function hybridScript(name: HybridScriptName): LuaScript {
  let script = cache.get(name);
  if (script === undefined) {
    const dir = luaDirectory();
    const source = ['hybrid_clock', name].map((file) => readFileSync(join(dir, `${file}.lua`), 'utf8')).join('\n');
    script = { name, source, sha1: createHash('sha1').update(source).digest('hex') };
    cache.set(name, script);
  }
  return script;
}

/** An entry script for a set of algorithms: the prelude, each algorithm's file once, then the entry. */
function compose(entry: 'decide' | 'refund', kinds: readonly AlgorithmKind[]): LuaScript {
  const wanted = [...new Set(kinds)].sort();
  const name = `${entry}:${wanted.join('+')}`;
  let script = cache.get(name);
  if (script === undefined) {
    const dir = luaDirectory();
    const files = ['prelude', ...new Set(wanted.flatMap((kind) => ALGORITHM_FILES[kind])), entry];
    const source = files.map((file) => readFileSync(join(dir, `${file}.lua`), 'utf8')).join('\n');
    script = { name, source, sha1: createHash('sha1').update(source).digest('hex') };
    cache.set(name, script);
  }
  return script;
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
