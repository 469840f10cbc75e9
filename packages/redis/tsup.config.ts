import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

// shims: the CJS build needs import.meta.url to find the .lua files it ships.
export default defineConfig({ ...packageBuild, shims: true });
