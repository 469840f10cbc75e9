/**
 * The scripts run what @sluice/redis's src/lua/sources.generated.ts holds (it owns every script), not its .lua files: a .lua file edited
 * without `node scripts/embed-lua.mjs` would be reviewed but never run. `npm test` runs `embed-lua.mjs --check`
 * (the text of each module); this checks what the modules evaluate to, so an escaping slip in the generator
 * (a backtick, `${`, a backslash, a carriage return) cannot hide behind identical text.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LUA_SOURCES as REDIS_SOURCES } from '../../packages/redis/src/lua/sources.generated.js';

const modules = [
  { name: '@sluice/redis', folder: new URL('../../packages/redis/src/lua/', import.meta.url), sources: REDIS_SOURCES },
];

describe.each(modules)('$name: sources.generated.ts', ({ folder, sources }) => {
  it('holds every .lua file of its folder, byte for byte, and nothing else', () => {
    const onDisk = Object.fromEntries(
      readdirSync(folder)
        .filter((file) => file.endsWith('.lua'))
        .map((file) => [file.slice(0, -'.lua'.length), readFileSync(new URL(file, folder), 'utf8')]),
    );
    expect(Object.keys(onDisk).length).toBeGreaterThan(0);
    expect({ ...sources }, 'out of date: run node scripts/embed-lua.mjs').toEqual(onDisk);
    expect(Object.isFrozen(sources)).toBe(true);
  });
});
