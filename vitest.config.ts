import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

// Tests import packages by name; these aliases point them at the sources, so no build is needed to test.
const alias = {
  '@sluice/core': src('core'),
  '@sluice/redis': src('redis'),
  '@sluice/hybrid': src('hybrid'),
};

export default defineConfig({
  resolve: { alias },
  test: {
    // CI also writes a JSON report, from which .ci/run prints the closing "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: process.env.CI ? { json: 'test-results/vitest.json' } : undefined,
    projects: [
      {
        resolve: { alias },
        test: { name: 'core', include: ['packages/core/src/**/*.test.ts'], environment: 'node' },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
