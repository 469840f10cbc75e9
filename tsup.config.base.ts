import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Options } from 'tsup';
import { distName } from './scripts/entries.mjs';

/**
 * A package's tsup entries, from the one list of its entry points (`sluice.entries` in its package.json;
 * scripts/entries.mjs derives the exports map from the same list): './http' builds to dist/http/index.
 */
export function packageEntries(packageDir: string): Record<string, string> {
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    sluice: { entries: Record<string, string> };
  };
  return Object.fromEntries(
    Object.entries(manifest.sluice.entries).map(([subpath, source]) => [distName(subpath), source]),
  );
}

/** Every package builds the same way: ESM + CJS + declarations of each of its entries (run in its folder). */
export const packageBuild: Options = {
  entry: packageEntries(process.cwd()),
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  // The tarballs ship dist only: maps would point at sources that are not in them.
  sourcemap: false,
  target: 'es2022',
  tsconfig: 'tsconfig.build.json',
};
