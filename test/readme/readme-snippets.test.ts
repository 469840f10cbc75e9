/**
 * Every TypeScript snippet of the README compiles as written, against the packages' sources, with only what
 * test/readme/env.d.ts takes as given (an app, a Redis client, a logger). NestJS snippets compile as Nest
 * apps do (experimentalDecorators, emitDecoratorMetadata); the rest as TypeScript 5 projects do.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const out = join(root, 'test', 'readme', '.snippets');
const snippets = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map(
  (m) => m[1] as string,
);

function compile(files: string[], legacyDecorators: boolean): string[] {
  const pkg = (name: string, sub = 'index.ts') => [join(root, 'packages', name, 'src', sub)];
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    experimentalDecorators: legacyDecorators,
    emitDecoratorMetadata: legacyDecorators,
    paths: {
      '@sluice/core': pkg('core'),
      '@sluice/core/*': [join(root, 'packages', 'core', 'src', '*', 'index.ts')],
      '@sluice/redis': pkg('redis'),
      // The hybrid package's sources import it: from the sources too, not a build that may be older.
      '@sluice/redis/internal': pkg('redis', 'internal/index.ts'),
      '@sluice/hybrid': pkg('hybrid'),
      '@sluice/nestjs': pkg('nestjs'),
      '@sluice/otel': pkg('otel'),
      '@sluice/cli': pkg('cli'),
    },
  };
  const program = ts.createProgram([join(root, 'test', 'readme', 'env.d.ts'), ...files], options);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file === undefined || files.includes(d.file.fileName) || d.file.fileName.endsWith('env.d.ts'))
    .map(
      (d) =>
        `${d.file ? `${d.file.fileName.slice(out.length + 1)}:${(d.file.getLineAndCharacterOfPosition(d.start ?? 0).line ?? 0) + 1} ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
}

describe('README snippets', () => {
  it(`all ${snippets.length} compile as written`, () => {
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    // Each snippet is its own module (a top-level await in one is fine).
    const files = snippets.map((code, i) => {
      const file = join(out, `snippet-${i + 1}.mts`);
      writeFileSync(file, `${code}\nexport {};\n`);
      return { file, nest: code.includes('@sluice/nestjs') };
    });
    const errors = [
      ...compile(
        files.filter((f) => !f.nest).map((f) => f.file),
        false,
      ),
      ...compile(
        files.filter((f) => f.nest).map((f) => f.file),
        true,
      ),
    ];
    expect(errors).toEqual([]);
  }, 120_000);
});
