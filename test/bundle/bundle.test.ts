/**
 * An app bundled into one file (as esbuild, or a Next.js server build, ships it) runs exact, leased and
 * divided mode: the Lua scripts travel inside the JavaScript (@sluice/redis's src/lua/sources.generated.ts), so the bundle is
 * run from a fresh folder with no node_modules above it and no .lua file anywhere near. ioredis is bundled
 * too, so the one file is all there is. Bundled from the sources (the repository's tsconfig paths and the
 * `sluice-source` condition lead there: no build needed), as ESM and as CommonJS: each format broke its own
 * way when the scripts were read from disk (ESM: no src/lua beside the bundle; CommonJS: no import.meta.url).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
const run = promisify(execFile);
let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sluice-bundle-'));
});
afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** Whether a node_modules folder is in `dir` or any folder above it: where Node would look for a package. */
function nodeModulesAbove(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) return at;
    if (dirname(at) === at) return undefined;
  }
}

describe.each(['esm', 'cjs'] as const)('an app bundled into one %s file', (format) => {
  it('decides exactly on Redis, leases and divides, with no .lua file and no node_modules', async () => {
    const folder = mkdtempSync(join(work, `${format}-`));
    const outfile = join(folder, format === 'esm' ? 'app.mjs' : 'app.cjs');
    const result = await build({
      entryPoints: [fileURLToPath(new URL('app.ts', import.meta.url))],
      outfile,
      bundle: true,
      platform: 'node',
      format,
      target: 'node20',
      conditions: ['sluice-source'],
      // Loaded by @sluice/redis only for a GLIDE client (an optional peer with a native addon, which no
      // bundler can inline): left out, as an app that does not use GLIDE leaves it.
      external: ['@valkey/valkey-glide'],
      // ioredis is CommonJS and requires Node's built-ins: an ES module bundle gives it a require to do so.
      banner:
        format === 'esm'
          ? { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" }
          : {},
      metafile: true,
      logLevel: 'silent',
    });
    // The CommonJS bundle of a package that read its scripts from disk warned here (import.meta is empty).
    expect(result.warnings.map((w) => w.text)).toEqual([]);
    const inputs = Object.keys(result.metafile?.inputs ?? {});
    // The bundle holds @sluice/redis's script module (every mode's scripts) and ioredis, and nothing is left to load from disk.
    expect(inputs.some((i) => i.endsWith('packages/redis/src/lua/sources.generated.ts'))).toBe(true);
    expect(inputs.some((i) => /node_modules\/.*ioredis\//.test(i))).toBe(true);
    expect(readdirSync(folder)).toEqual([outfile.slice(folder.length + 1)]);
    expect(nodeModulesAbove(folder)).toBeUndefined();
    expect(readFileSync(outfile, 'utf8')).not.toMatch(/readFileSync\([^)]*\.lua/);

    const { stdout } = await run(process.execPath, [outfile, redis().server.url, `bundle-${format}-${Date.now()}`], {
      cwd: folder,
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? '' }, // no NODE_PATH, no NODE_OPTIONS: the file alone
    });
    expect(JSON.parse(stdout)).toEqual({
      exactOne: [2, 1, 0, 'denied'], // fixedWindow limit 3 (decide_one.lua)
      exactPolicy: [1, 0, 'denied', 'denied'], // log of 5 and bucket of 2: the bucket is the tightest (decide.lua)
      afterRefund: 0, // one permit refunded (adjust.lua), taken again
      leasedAdmitted: 100, // the bucket's capacity, leased (lease.lua) and spent in the process
      leases: expect.any(Number),
      dividedAdmitted: 100, // 80 held from the first heartbeat (membership.lua), 20 drawn from the reserve
      errors: [],
    });
    expect(JSON.parse(stdout).leases).toBeGreaterThan(0);
  });
});
