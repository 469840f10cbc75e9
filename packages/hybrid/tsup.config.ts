import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

// shims: the CJS build needs import.meta.url to find the .lua files it ships (leased mode's lease script
// crashed in CommonJS without it: found by test/package-install.test.ts).
export default defineConfig({ ...packageBuild, shims: true });
