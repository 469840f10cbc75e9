import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LUA_SOURCES } from './sources.generated.js';

// The scripts run what sources.generated.ts holds, not the .lua files: a .lua file edited without
// `node scripts/embed-lua.mjs` would be reviewed but never run.
describe('sources.generated.ts', () => {
  it('holds every .lua file of its folder, byte for byte, and nothing else', () => {
    const folder = new URL('.', import.meta.url);
    const onDisk = Object.fromEntries(
      readdirSync(folder)
        .filter((file) => file.endsWith('.lua'))
        .map((file) => [file.slice(0, -'.lua'.length), readFileSync(new URL(file, folder), 'utf8')]),
    );
    expect({ ...LUA_SOURCES }, 'out of date: run node scripts/embed-lua.mjs').toEqual(onDisk);
    expect(Object.isFrozen(LUA_SOURCES)).toBe(true);
  });
});
