import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

// shims: the CJS build needs import.meta.url to find the .lua files it ships.
// splitting: the subpaths share one copy of each module (one connection per client, one script registry).
export default defineConfig({ ...packageBuild, shims: true, splitting: true });
