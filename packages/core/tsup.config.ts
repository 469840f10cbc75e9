import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

export default defineConfig({
  ...packageBuild,
  entry: {
    index: 'src/index.ts',
    'http/index': 'src/http/index.ts',
    'fetch/index': 'src/fetch/index.ts',
    'hono/index': 'src/hono/index.ts',
    'koa/index': 'src/koa/index.ts',
    'decorators/index': 'src/decorators/index.ts',
    'store-kit/index': 'src/store-kit/index.ts',
  },
  // Shared chunks in both formats: the subpaths must share one copy of the error classes, or instanceof breaks.
  splitting: true,
});
