import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

// splitting: the subpaths share one copy of each module (one connection per client, one script registry).
export default defineConfig({ ...packageBuild, splitting: true });
