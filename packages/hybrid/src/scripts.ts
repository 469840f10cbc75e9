import { type LuaScript, luaDirectory, luaScript } from '@sluice/redis';

/** The scripts of the hybrid modes (see each .lua file's header for its KEYS, ARGV and reply). */
export type HybridScriptName = 'lease' | 'lease_return' | 'heartbeat';

let directory: string | undefined;

/** A hybrid script, after the clock helper, registered in @sluice/redis's one script registry. */
export function hybridScript(name: HybridScriptName): LuaScript {
  directory ??= luaDirectory(import.meta.url, 'lease.lua');
  return luaScript(`hybrid:${name}`, directory, ['hybrid_clock', name]);
}
