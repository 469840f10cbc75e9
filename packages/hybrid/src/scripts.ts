import type { AlgorithmKind } from '@sluice/core';
import {
  type LuaScript,
  algorithmFiles,
  algorithmScriptName,
  luaDirectory,
  luaScript,
  nodeSeenFile,
} from '@sluice/redis/store-kit';

let directory: string | undefined;
const hybridLua = (): string => (directory ??= luaDirectory(import.meta.url, 'lease.lua'));

/**
 * The lease script for a rule of `kind` (see lease.lua): @sluice/redis's prelude and that algorithm's file,
 * then lease.lua, registered in @sluice/redis's one script registry.
 */
export function leaseScript(kind: AlgorithmKind): LuaScript {
  return luaScript(algorithmScriptName('hybrid:lease', [kind]), [
    ...algorithmFiles([kind]),
    { directory: hybridLua(), file: 'lease' },
  ]);
}

/**
 * Divided mode's heartbeat script (see membership.lua), after the prelude for its clock helper and node_seen.lua
 * for a node id two live processes were given.
 */
export function membershipScript(): LuaScript {
  return luaScript('hybrid:membership', [
    ...algorithmFiles([]),
    nodeSeenFile(),
    { directory: hybridLua(), file: 'membership' },
  ]);
}
