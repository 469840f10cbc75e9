import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { distName, packageEntries } from '../scripts/entries.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const testDir = fileURLToPath(new URL('.', import.meta.url));
/** Every package and its entry points, from the one list in each package.json (scripts/entries.mjs). */
const PACKAGES = packageEntries();

/** Runs plain node (no tsx, no source condition) from test/, where @sluice/* resolve to the built packages. */
function node(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: testDir, encoding: 'utf8' });
}

describe('published packages', () => {
  it("every package's exports map, typedoc entries and the tsconfig paths are generated from its entries", () => {
    expect(() => node(['../scripts/entries.mjs', '--check'])).not.toThrow();
  });

  for (const { name: pkg, dir, entries } of PACKAGES) {
    describe(pkg, () => {
      it('is built (npm test builds every package first)', () => {
        for (const [subpath] of entries) {
          for (const ext of ['.js', '.cjs', '.d.ts', '.d.cts']) {
            const file = `${distName(subpath)}${ext}`;
            expect(existsSync(`${dir}/dist/${file}`), `dist/${file}`).toBe(true);
          }
        }
      });

      it('loads from ESM and from CJS with the same exports', () => {
        const esm = node([
          '--input-type=module',
          '-e',
          `const m = await import('${pkg}'); console.log(JSON.stringify(Object.keys(m).sort()))`,
        ]);
        const cjs = node([
          '-e',
          `console.log(JSON.stringify(Object.keys(require('${pkg}')).filter(k => k !== 'default').sort()))`,
        ]);
        expect(JSON.parse(cjs)).toEqual(JSON.parse(esm));
        expect(JSON.parse(esm).length).toBeGreaterThan(0);
      });
    });
  }

  const subpaths = PACKAGES.flatMap(({ name, entries }) =>
    entries.filter(([subpath]) => subpath !== '.').map(([subpath]) => [name, `${name}/${subpath.slice(2)}`]),
  );
  it.each(subpaths)('%s: %s loads from ESM and CJS with the same exports, sharing the root classes', (pkg, sub) => {
    const esm = node([
      '--input-type=module',
      '-e',
      `const m = await import('${sub}'); const root = await import('${pkg}');
       console.log(JSON.stringify({ keys: Object.keys(m).sort(), shared: m.RateLimitedError === undefined || m.RateLimitedError === root.RateLimitedError }))`,
    ]);
    const cjs = node([
      '-e',
      `const m = require('${sub}'); const root = require('${pkg}');
       console.log(JSON.stringify({ keys: Object.keys(m).filter(k => k !== 'default').sort(), shared: m.RateLimitedError === undefined || m.RateLimitedError === root.RateLimitedError }))`,
    ]);
    expect(JSON.parse(cjs)).toEqual(JSON.parse(esm));
    expect(JSON.parse(esm).shared).toBe(true);
    expect(JSON.parse(esm).keys.length).toBeGreaterThan(0);
  });

  it('the HTTP subpaths share one request context (CJS): a context opened by /fetch or /koa is seen by /http', () => {
    // The framework subpaths export their adapter only; the request context is read from @sluice/core/http.
    const script = `const core = require('@sluice/core'), http = require('@sluice/core/http');
       const fetch = require('@sluice/core/fetch'), koa = require('@sluice/core/koa');
       const limiter = core.createLimiter({ rules: core.fixedWindow({ limit: 9, windowMs: 60000 }) });
       const seen = [];
       const handler = fetch.fetchRateLimit({ limiter, key: () => 'k' })(async () => {
         seen.push(http.currentRequestContext()?.view.path); return new Response('');
       });
       const ctx = { get: () => '', set() {}, ip: '', method: 'GET', path: '/k', status: 200, body: undefined };
       (async () => {
         await handler(new Request('http://x/f'));
         await koa.koaRateLimit({ limiter, key: () => 'k' })(ctx, async () => { seen.push(http.currentRequestContext()?.view.path) });
         console.log(JSON.stringify(seen));
       })();`;
    expect(JSON.parse(node(['-e', script]))).toEqual(['/f', '/k']);
  });

  it('@sluice/core imports no node: module and depends on no framework', () => {
    const sources = execFileSync('git', ['ls-files', 'packages/core/src'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const offenders = sources.filter((f) =>
      /from ['"]node:|require\(['"]node:/.test(readFileSync(`${root}/${f}`, 'utf8')),
    );
    expect(offenders).toEqual([]);
    const manifest = JSON.parse(readFileSync(`${root}/packages/core/package.json`, 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional: boolean }>;
    };
    // ipaddr.js: the access lists' addresses and CIDR ranges (pure JS, no node: import).
    expect(Object.keys(manifest.dependencies)).toEqual(['ipaddr.js', 'lru-cache']);
    expect(Object.values(manifest.peerDependenciesMeta).every((p) => p.optional)).toBe(true);
  });

  it('an input error thrown inside @sluice/core/http (CJS) is an instance of the root package class', () => {
    const out = node([
      '-e',
      `const { rateLimit } = require('@sluice/core/http'); const { SluiceTypeError } = require('@sluice/core');
       try { rateLimit({ limiter: {} }) } catch (e) { console.log(JSON.stringify([e instanceof SluiceTypeError, e.argument])) }`,
    ]);
    expect(JSON.parse(out)).toEqual([true, 'limiter']);
  });

  it('@sluice/otel (ESM) counts the decisions of a limiter made with the CommonJS core, and warnings are said once between the two', () => {
    const out = node([
      '--no-warnings',
      '--input-type=module',
      '-e',
      `import { createRequire } from 'node:module';
       import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
       import { instrumentSluice } from '@sluice/otel';
       import { silenceWarnings } from '@sluice/core';
       const require = createRequire(process.cwd() + '/');
       const cjs = require('@sluice/core');
       class Reader extends MetricReader { async onShutdown() {} async onForceFlush() {} }
       const reader = new Reader();
       instrumentSluice({ meterProvider: new MeterProvider({ readers: [reader] }) });
       const limiter = cjs.createLimiter({ rules: cjs.fixedWindow({ limit: 1, windowMs: 60000 }), prefix: 'from-cjs' });
       await limiter.tryAcquire('k'); await limiter.tryAcquire('k');
       const { resourceMetrics } = await reader.collect();
       const decisions = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'sluice.decisions');
       const warned = []; process.on('warning', (w) => warned.push(w.code));
       (await import('@sluice/core/internal')).warnOnce('SLUICE_OFFLINE_QUEUE', 'said by the ESM copy.');
       require('@sluice/core/internal').warnOnce('SLUICE_OFFLINE_QUEUE', 'said again by the CommonJS copy.');
       silenceWarnings('SLUICE_CROSS_SLOT');
       require('@sluice/core/internal').warnOnce('SLUICE_CROSS_SLOT', 'silenced through the ESM copy.');
       await new Promise((r) => setImmediate(r));
       console.log(JSON.stringify({ points: decisions.dataPoints.map((p) => [p.attributes['sluice.limiter'], p.attributes['sluice.outcome'], p.value]), warned }));`,
    ]);
    expect(JSON.parse(out)).toEqual({
      points: [
        ['from-cjs', 'allowed', 1],
        ['from-cjs', 'denied', 1],
      ],
      warned: ['SLUICE_OFFLINE_QUEUE'],
    });
  });

  it('the CJS build of core makes real decisions', () => {
    const out = node([
      '-e',
      `const { createLimiter, fixedWindow, RateLimiter } = require('@sluice/core');
       const l = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60000 }) });
       (async () => {
         const a = [await l.tryAcquire('k'), await l.tryAcquire('k'), await l.tryAcquire('k')].map(d => d.allowed);
         const r = RateLimiter.create(1);
         console.log(JSON.stringify([...a, r.tryAcquire(), r.tryAcquire()]));
       })();`,
    ]);
    expect(JSON.parse(out)).toEqual([true, true, false, true, false]);
  });
});
