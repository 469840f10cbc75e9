import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

// Nest's decorators are the legacy (experimentalDecorators) kind; the package injects by explicit tokens,
// so it needs no emitted design metadata (esbuild emits none).
export default defineConfig(packageBuild);
