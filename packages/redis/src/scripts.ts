import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A Lua script as Redis sees it: the source sent by EVAL and the sha1 EVALSHA names it by. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
}

/**
 * The files each script is composed of, in order. One file per algorithm; every script that needs an
 * algorithm includes that one file, so there is exactly one copy of each.
 */
const COMPOSITION = {
  decide: [
    'prelude',
    'fixed_window',
    'sliding_window_log',
    'sliding_window_counter',
    'token_bucket',
    'leaky_bucket',
    'gcra',
    'smooth_rate',
    'smooth_bursty',
    'smooth_warming_up',
    'decide',
  ],
} as const;

/** The .lua files ship in src/lua: beside this module when run from source, beside dist/ when built. */
function luaDirectory(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'lua'), join(here, '..', 'src', 'lua')];
  const found = candidates.find((dir) => existsSync(join(dir, 'decide.lua')));
  if (!found) throw new Error(`@sluice/redis: Lua scripts not found in ${candidates.join(' or ')}`);
  return found;
}

export function composeScript(name: keyof typeof COMPOSITION, dir = luaDirectory()): LuaScript {
  const source = COMPOSITION[name].map((file) => readFileSync(join(dir, `${file}.lua`), 'utf8')).join('\n');
  return { name, source, sha1: createHash('sha1').update(source).digest('hex') };
}

let decide: LuaScript | undefined;
/** The script that decides every algorithm and policy (loaded from disk once). */
export function decideScript(): LuaScript {
  decide ??= composeScript('decide');
  return decide;
}
