import type { Options } from 'tsup';

/** Every package builds the same way: ESM + CJS + declarations from src/index.ts. */
export const packageBuild: Options = {
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  // The tarballs ship dist only: maps would point at sources that are not in them.
  sourcemap: false,
  target: 'es2022',
  tsconfig: 'tsconfig.build.json',
};
