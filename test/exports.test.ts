import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const testDir = fileURLToPath(new URL('.', import.meta.url));
const attw = fileURLToPath(new URL('../node_modules/.bin/attw', import.meta.url));
const PACKAGES = ['core', 'redis', 'hybrid'] as const;

/** Runs plain node (no tsx, no source condition) from test/, where @sluice/* resolve to the built packages. */
function node(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: testDir, encoding: 'utf8' });
}

describe('published packages', () => {
  for (const pkg of PACKAGES) {
    describe(`@sluice/${pkg}`, () => {
      it('is built (npm test builds every package first)', () => {
        for (const file of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
          expect(existsSync(`${root}/packages/${pkg}/dist/${file}`), `dist/${file}`).toBe(true);
        }
      });

      it('passes attw --pack: ESM, CJS and types resolve under node16 and bundlers', () => {
        const out = execFileSync(attw, ['--pack', '.', '--profile', 'node16', '--format', 'json'], {
          cwd: `${root}/packages/${pkg}`,
          encoding: 'utf8',
          env: { ...process.env, npm_config_loglevel: 'error' },
        });
        const report = JSON.parse(out) as { analysis: { problems: unknown[] } };
        expect(report.analysis.problems).toEqual([]);
      });

      it('loads from ESM and from CJS with the same exports', () => {
        const esm = node(['--input-type=module', '-e', `const m = await import('@sluice/${pkg}'); console.log(JSON.stringify(Object.keys(m).sort()))`]);
        const cjs = node(['-e', `console.log(JSON.stringify(Object.keys(require('@sluice/${pkg}')).filter(k => k !== 'default').sort()))`]);
        expect(JSON.parse(cjs)).toEqual(JSON.parse(esm));
        expect(JSON.parse(esm).length).toBeGreaterThan(0);
      });
    });
  }

  it('the CJS build of core makes real decisions', () => {
    const out = node([
      '-e',
      `const { createLimiter, fixedWindow, RateLimiter } = require('@sluice/core');
       const l = createLimiter({ algorithm: fixedWindow({ limit: 2, windowMs: 60000 }) });
       (async () => {
         const a = [await l.tryAcquire('k'), await l.tryAcquire('k'), await l.tryAcquire('k')].map(d => d.allowed);
         const r = RateLimiter.create(1);
         console.log(JSON.stringify([...a, r.tryAcquire(), r.tryAcquire()]));
       })();`,
    ]);
    expect(JSON.parse(out)).toEqual([true, true, false, true, false]);
  });
});
