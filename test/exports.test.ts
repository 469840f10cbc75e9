import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const testDir = fileURLToPath(new URL('.', import.meta.url));
const PACKAGES = ['core', 'redis', 'hybrid', 'nestjs', 'otel'] as const;

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

      it('loads from ESM and from CJS with the same exports', () => {
        const esm = node([
          '--input-type=module',
          '-e',
          `const m = await import('@sluice/${pkg}'); console.log(JSON.stringify(Object.keys(m).sort()))`,
        ]);
        const cjs = node([
          '-e',
          `console.log(JSON.stringify(Object.keys(require('@sluice/${pkg}')).filter(k => k !== 'default').sort()))`,
        ]);
        expect(JSON.parse(cjs)).toEqual(JSON.parse(esm));
        expect(JSON.parse(esm).length).toBeGreaterThan(0);
      });
    });
  }

  it.each([
    ['http', 'rateLimit'],
    ['decorators', 'rateLimited'],
    ['fetch', 'fetchRateLimit'],
    ['hono', 'honoRateLimit'],
    ['koa', 'koaRateLimit'],
    ['store-kit', 'mergePolicy'],
  ])('@sluice/core/%s loads from ESM and CJS with the same exports, sharing the root classes', (sub, main) => {
    const esm = node([
      '--input-type=module',
      '-e',
      `const m = await import('@sluice/core/${sub}'); const root = await import('@sluice/core');
       console.log(JSON.stringify({ keys: Object.keys(m).sort(), shared: m.RateLimitedError === undefined || m.RateLimitedError === root.RateLimitedError }))`,
    ]);
    const cjs = node([
      '-e',
      `const m = require('@sluice/core/${sub}'); const root = require('@sluice/core');
       console.log(JSON.stringify({ keys: Object.keys(m).filter(k => k !== 'default').sort(), shared: m.RateLimitedError === undefined || m.RateLimitedError === root.RateLimitedError }))`,
    ]);
    expect(JSON.parse(cjs)).toEqual(JSON.parse(esm));
    expect(JSON.parse(esm).shared).toBe(true);
    expect(JSON.parse(esm).keys).toContain(main);
  });

  it('the HTTP subpaths share one request context (CJS and ESM): a context opened by one is seen by the others', () => {
    const script = (load: string) => `${load}
       const http = m('@sluice/core/http'), fetch = m('@sluice/core/fetch'), koa = m('@sluice/core/koa');
       http.requestContext()({ headers: {}, url: '/x' }, {}, () => console.log(JSON.stringify([fetch.currentRequestContext()?.view.path, koa.currentRequestContext()?.view.path])));`;
    expect(JSON.parse(node(['-e', script('const m = require;')]))).toEqual(['/x', '/x']);
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
    expect(Object.keys(manifest.dependencies)).toEqual(['lru-cache']);
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
       (await import('@sluice/core/store-kit')).warnOnce('SLUICE_OFFLINE_QUEUE', 'said by the ESM copy.');
       require('@sluice/core/store-kit').warnOnce('SLUICE_OFFLINE_QUEUE', 'said again by the CommonJS copy.');
       silenceWarnings('SLUICE_CROSS_SLOT');
       require('@sluice/core/store-kit').warnOnce('SLUICE_CROSS_SLOT', 'silenced through the ESM copy.');
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
