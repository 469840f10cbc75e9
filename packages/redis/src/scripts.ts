import { createHash } from 'node:crypto';
import type { AlgorithmKind } from '@sluice/core';
import { LUA_SOURCES, type LuaFileName } from './lua/sources.generated.js';

/**
 * A Lua script as Redis sees it: the source sent by EVAL and the sha1 EVALSHA names it by, and the same
 * script as a Redis Functions library (see functionLibrary), which connections prefer where the server
 * runs functions.
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
  /** The library FUNCTION LOAD takes: the script's definitions built once per server, its entry per call. */
  readonly library: string;
  /** The one function the library registers, and the library's name: FCALL calls it by this name. */
  readonly functionName: string;
}

/** Each algorithm's file, and the files it needs before it. One file per algorithm: one copy of each. */
const ALGORITHM_FILES: Record<AlgorithmKind, readonly LuaFileName[]> = {
  fixedWindow: ['fixed_window'],
  calendarWindow: ['calendar_window'],
  slidingWindowLog: ['sliding_window_log'],
  slidingWindowCounter: ['sliding_window_counter'],
  tokenBucket: ['token_bucket'],
  leakyBucket: ['leaky_bucket'],
  gcra: ['gcra'],
  smoothBursty: ['smooth_rate', 'smooth_bursty'],
  smoothWarmingUp: ['smooth_rate', 'smooth_warming_up'],
};

/**
 * One .lua file a script is composed of: its name without `.lua` and its text. A package holds its files'
 * texts in a module generated from them (src/lua/sources.generated.ts, see scripts/embed-lua.mjs), so a
 * script needs no file at run time and an app bundled into one file runs it.
 */
export interface LuaFile {
  readonly file: string;
  readonly source: string;
}

const cache = new Map<string, LuaScript>();

const sha1Of = (text: string): string => createHash('sha1').update(text).digest('hex');

/**
 * A script as a function library: `definitions` (every file but the entry: helpers, algorithms) run once,
 * at the first FCALL after the library is loaded, and `entry` (the last file, the script's body) runs per
 * call as a closure over them. EVAL runs the whole script on every call, so each call pays for defining
 * every helper again; here a call pays only for its entry. The definitions run at the first call, not at
 * load, because a library's load-time code may use no standard library (not even `math`). KEYS and ARGV
 * are upvalues the callback sets per call, so the files read the same names in both forms. Named after
 * its own text, so two versions of a script never replace each other's function.
 */
function functionLibrary(definitions: string, entry: string): { library: string; functionName: string } {
  const text = (name: string) =>
    [
      `#!lua name=${name}`,
      'local function build()',
      'local KEYS, ARGV',
      definitions,
      'return function(keys, args)',
      'KEYS, ARGV = keys, args',
      entry,
      'end',
      'end',
      'local run',
      `redis.register_function('${name}', function(keys, args)`,
      '  if run == nil then run = build() end',
      '  return run(keys, args)',
      'end)',
    ].join('\n');
  const functionName = `sluice_${sha1Of(text('NAME'))}`;
  return { library: text(functionName), functionName };
}

/**
 * The one registry of Lua scripts: a script named `name`, composed of `files` in order (the last one its
 * entry, the others definitions it calls), and kept; its sha1 is computed from exactly the text sent.
 * @sluice/redis owns every script (leased and divided modes' lease.lua and membership.lua too: leaseScript,
 * membershipScript); a package of its own may compose more through it, on top of `algorithmFiles`.
 * @example
 * const script = luaScript('my:script', [...algorithmFiles([]), { file: 'my_script', source: MY_SCRIPT_LUA }])
 */
export function luaScript(name: string, files: readonly LuaFile[]): LuaScript {
  let script = cache.get(name);
  if (script === undefined) {
    const texts = files.map(({ source }) => source);
    const source = texts.join('\n');
    const entry = texts.pop() ?? '';
    script = { name, source, sha1: sha1Of(source), ...functionLibrary(texts.join('\n'), entry) };
    cache.set(name, script);
  }
  return script;
}

/** One of @sluice/redis's own .lua files. */
export function redisLuaFile(file: LuaFileName): LuaFile {
  return { file, source: LUA_SOURCES[file] };
}

/**
 * The prelude and each of `kinds`' files once: what a script needs before its entry to call
 * `ALGORITHMS[kind]`, `REFUNDS[kind]` and `PENALTIES[kind]` (see prelude.lua). Sorted, so one set of kinds is
 * one script.
 * @example
 * const files = [...algorithmFiles(['tokenBucket']), { file: 'my_script', source: MY_SCRIPT_LUA }]
 */
export function algorithmFiles(kinds: readonly AlgorithmKind[]): LuaFile[] {
  const files = new Set([...new Set(kinds)].sort().flatMap((kind) => ALGORITHM_FILES[kind]));
  return ['prelude' as const, ...files].map(redisLuaFile);
}

/**
 * A script's registry name for an entry over a set of algorithms.
 * @example
 * algorithmScriptName('my:lease', ['tokenBucket']) // one registry name per entry and set of kinds
 */
export function algorithmScriptName(entry: string, kinds: readonly AlgorithmKind[]): string {
  return `${entry}:${[...new Set(kinds)].sort().join('+')}`;
}

/** The files an entry needs between the algorithms and itself. */
const ENTRY_FILES: Record<'decide' | 'decide_one' | 'adjust', readonly LuaFileName[]> = {
  decide: ['one_rule'],
  decide_one: ['one_rule'],
  adjust: [],
};

function compose(entry: keyof typeof ENTRY_FILES, kinds: readonly AlgorithmKind[]): LuaScript {
  return luaScript(algorithmScriptName(entry, kinds), [
    ...algorithmFiles(kinds),
    ...[...ENTRY_FILES[entry], entry].map(redisLuaFile),
  ]);
}

/**
 * The decide script for a set of algorithms, so a limiter's script defines only the functions it runs.
 * Composed from the .lua files' texts on first use and kept; its sha1 is computed from exactly the text sent.
 * @example
 * const script = decideScript(['fixedWindow', 'tokenBucket'])
 */
export function decideScript(
  kinds: readonly AlgorithmKind[] = Object.keys(ALGORITHM_FILES) as AlgorithmKind[],
): LuaScript {
  return compose('decide', kinds);
}

/**
 * The lean script for one request of a one-rule limiter (see decide_one.lua): what a lone decision sends.
 * @example
 * const script = decideOneScript('fixedWindow')
 */
export function decideOneScript(kind: AlgorithmKind): LuaScript {
  return compose('decide_one', [kind]);
}

/**
 * The script that refunds or penalizes rules of a set of algorithms (see adjust.lua).
 * @example
 * await connection.runScript(adjustScript(['tokenBucket']), keys, args)
 */
export function adjustScript(kinds: readonly AlgorithmKind[]): LuaScript {
  return compose('adjust', kinds);
}

/**
 * The slots of a concurrencyLimiter on Redis (see semaphore.lua).
 * @example
 * await connection.runScript(semaphoreScript(), semaphoreKeys(prefix, key), args)
 */
export function semaphoreScript(): LuaScript {
  return luaScript('semaphore', [redisLuaFile('prelude'), redisLuaFile('semaphore')]);
}

/**
 * A throttle's pauses on Redis (see pause.lua).
 * @example
 * await connection.runScript(pauseScript(), pauseKeys(prefix, key), ['read'])
 */
export function pauseScript(): LuaScript {
  return luaScript('pause', [redisLuaFile('pause')]);
}

/**
 * What a limiter says it runs, for the CLI (see descriptor.lua).
 * @example
 * await connection.runScript(descriptorScript(), [descriptorKey(prefix)], ['read'])
 */
export function descriptorScript(): LuaScript {
  return luaScript('descriptor', [redisLuaFile('descriptor')]);
}

/**
 * A limiter's allow and deny lists on Redis (see access_list.lua).
 * @example
 * await connection.runScript(accessListScript(), accessListKeys(prefix), ['read', ''])
 */
export function accessListScript(): LuaScript {
  return luaScript('access_list', [redisLuaFile('access_list')]);
}

/**
 * A limiter's limited-keys board on Redis (see limited_keys.lua).
 * @example
 * await connection.runScript(limitedKeysScript(), limitedKeysKeys(prefix, minute), ['read'])
 */
export function limitedKeysScript(): LuaScript {
  return luaScript('limited_keys', [redisLuaFile('limited_keys')]);
}

/**
 * The script behind limiter.block (see block.lua): the prelude's helpers and its entry.
 * @example
 * await connection.runScript(blockScript(), [banKey(prefix, key), banMarkerKey(prefix, undefined)], [numArg(ms), ''])
 */
export function blockScript(): LuaScript {
  return luaScript('block', [redisLuaFile('prelude'), redisLuaFile('block')]);
}

/**
 * The fleet heartbeats' helper that tells a node id two live processes were given (node_seen.lua), for a
 * heartbeat script to compose after the prelude.
 * @example
 * luaScript('my:heartbeat', [...algorithmFiles([]), nodeSeenFile(), { file: 'my_beat', source: MY_BEAT_LUA }])
 */
export function nodeSeenFile(): LuaFile {
  return redisLuaFile('node_seen');
}

/**
 * A node's heartbeat in its limiters' fleets (see presence.lua): how many nodes share each limit.
 * @example
 * const counts = await connection.runScript(presenceScript(), [fleetKey('api')], [nodeId, '3000', '', '0', ''])
 */
export function presenceScript(): LuaScript {
  return luaScript('presence', [redisLuaFile('prelude'), nodeSeenFile(), redisLuaFile('presence')]);
}

/**
 * Leased and divided modes' lease of a rule of `kind` (see lease.lua): the prelude and that algorithm's file,
 * then lease.lua, so a lease is the algorithm's own consume.
 * @example
 * await connection.runScript(leaseScript('tokenBucket'), [state, lessees], args)
 */
export function leaseScript(kind: AlgorithmKind): LuaScript {
  return luaScript(algorithmScriptName('hybrid:lease', [kind]), [...algorithmFiles([kind]), redisLuaFile('lease')]);
}

/**
 * Divided mode's heartbeat (see membership.lua), after the prelude for its clock helper and node_seen.lua for
 * a node id two live processes were given.
 * @example
 * const reply = await connection.runScript(membershipScript(), keys, args)
 */
export function membershipScript(): LuaScript {
  return luaScript('hybrid:membership', [...algorithmFiles([]), nodeSeenFile(), redisLuaFile('membership')]);
}

/**
 * Every script exact decisions over `kinds` may run (decide, decide_one per kind, adjust, block): what a
 * store's start-up check runs the commands of.
 * @example
 * checks.add(prefix, exactScripts(['fixedWindow']))
 */
export function exactScripts(kinds: readonly AlgorithmKind[]): LuaScript[] {
  return [decideScript(kinds), ...[...new Set(kinds)].map(decideOneScript), adjustScript(kinds), blockScript()];
}

/**
 * Moves one key's states from a limiter's earlier rules to the rules in force (see carry_key.lua): the
 * algorithms of `kinds` and carry.lua.
 * @example
 * await connection.runScript(carryKeyScript(['tokenBucket']), keys, args) // keys, args: see LiveBinding
 */
export function carryKeyScript(kinds: readonly AlgorithmKind[]): LuaScript {
  return luaScript(algorithmScriptName('carry_key', kinds), [
    ...algorithmFiles(kinds),
    redisLuaFile('carry'),
    redisLuaFile('carry_key'),
  ]);
}

/**
 * Raises one slot's configuration version (see raise_version.lua).
 * @example
 * await connection.runScript(raiseVersionScript(), [versionKey('api', undefined)], ['2'])
 */
export function raiseVersionScript(): LuaScript {
  return luaScript('raise_version', [redisLuaFile('raise_version')]);
}

/**
 * Stores a limiter's new configuration if its version is still the one changed (see config_write.lua).
 * @example
 * await connection.runScript(configWriteScript(), [configKey('api')], ['1', record])
 */
export function configWriteScript(): LuaScript {
  return luaScript('config_write', [redisLuaFile('config_write')]);
}

/**
 * Reads a limiter's stored configuration and Redis's time (see config_read.lua).
 * @example
 * const [record, nowMs] = await connection.runScript(configReadScript(), [configKey('api')], [])
 */
export function configReadScript(): LuaScript {
  return luaScript('config_read', [redisLuaFile('config_read')]);
}
