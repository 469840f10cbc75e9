import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';
import ts from 'typescript';
import { type Plugin, defineConfig } from 'vitest/config';
import { packageEntries } from './scripts/entries.mjs';

/**
 * Vite 8's oxc transform strips types but leaves TC39 (TypeScript 5 standard) decorators in place, which
 * Node 20 cannot parse; esbuild lowers them. Only files that use a decorator take this path.
 */
const standardDecorators: Plugin = {
  name: 'sluice:standard-decorators',
  enforce: 'pre',
  async transform(code, id) {
    if (!id.endsWith('.ts') || !/^\s*@[A-Za-z_$]/m.test(code)) return null;
    // NestJS code uses legacy decorators with design-type metadata, compiled as Nest apps are (tsc's own
    // transpiler: esbuild emits no decorator metadata).
    if (/[/\\]nestjs[/\\]/.test(id)) {
      const out = ts.transpileModule(code, {
        fileName: id,
        compilerOptions: {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          sourceMap: true,
          verbatimModuleSyntax: false,
        },
      });
      return { code: out.outputText, map: out.sourceMapText };
    }
    const result = await transform(code, {
      loader: 'ts',
      target: 'es2022',
      format: 'esm',
      sourcefile: id,
      sourcemap: true,
    });
    return { code: result.code, map: result.map };
  },
};

const nest11 = fileURLToPath(new URL('./test/nest11/node_modules/', import.meta.url));

// Tests import packages by name; these aliases point them at the sources, so no build is needed to test.
// Each package's entry points are listed once, in its package.json (see scripts/entries.mjs).
const alias = packageEntries().flatMap(({ name, dir, entries }) =>
  entries.map(([subpath, source]) => ({
    find: new RegExp(`^${(subpath === '.' ? name : `${name}/${subpath.slice(2)}`).replaceAll('/', '\\/')}$`),
    replacement: join(dir, source),
  })),
);

export default defineConfig({
  plugins: [standardDecorators],
  resolve: { alias },
  test: {
    // CI also writes a JSON report, from which .ci/run prints the closing "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: process.env.CI ? { json: 'test-results/vitest.json' } : undefined,
    projects: [
      {
        plugins: [standardDecorators],
        resolve: { alias },
        // test/lua checks what the generated Lua modules hold, as unit tests do: `npm run test:unit` catches a
        // stale one too. test/engine runs the engine contract's conformance suite on the memory engine: no
        // backend, no process of its own.
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'test/lua/**/*.test.ts', 'test/engine/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        plugins: [standardDecorators],
        // Every @nestjs/* package from test/nest11 (NestJS 11: HTTP, GraphQL, WebSocket and microservice
        // packages) for the sources and tests it runs, wherever they live.
        resolve: {
          alias: [
            ...alias,
            {
              find: /^@nestjs\/([^/]+)(\/.*)?$/,
              replacement: `${nest11}@nestjs/$1$2`,
            },
          ],
        },
        test: { name: 'nest11', include: ['test/nest11/**/*.test.ts'], environment: 'node', testTimeout: 120_000 },
      },
      {
        plugins: [standardDecorators],
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/nest11/**', 'test/lua/**', 'test/engine/**', '**/node_modules/**'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
