import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.config.base.js';

export default defineConfig(packageBuild);
