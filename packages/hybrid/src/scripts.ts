import type { AlgorithmKind } from '@sluice/core';
import {
  type LuaFile,
  type LuaScript,
  algorithmFiles,
  algorithmScriptName,
  luaScript,
  nodeSeenFile,
} from '@sluice/redis/store-kit';
import { LUA_SOURCES, type LuaFileName } from './lua/sources.generated.js';

/** One of @sluice/hybrid's own .lua files (their texts are built in: see scripts/embed-lua.mjs). */
const hybridLuaFile = (file: LuaFileName): LuaFile => ({ file, source: LUA_SOURCES[file] });

/**
 * The lease script for a rule of `kind` (see lease.lua): @sluice/redis's prelude and that algorithm's file,
 * then lease.lua, registered in @sluice/redis's one script registry.
 */
export function leaseScript(kind: AlgorithmKind): LuaScript {
  return luaScript(algorithmScriptName('hybrid:lease', [kind]), [...algorithmFiles([kind]), hybridLuaFile('lease')]);
}

/**
 * Divided mode's heartbeat script (see membership.lua), after the prelude for its clock helper and node_seen.lua
 * for a node id two live processes were given.
 */
export function membershipScript(): LuaScript {
  return luaScript('hybrid:membership', [...algorithmFiles([]), nodeSeenFile(), hybridLuaFile('membership')]);
}
