import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

export default defineConfig({
  ...packageBuild,
  // Shared chunks in both formats: the subpaths must share one copy of the error classes, or instanceof breaks.
  splitting: true,
});
