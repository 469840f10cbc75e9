#!/usr/bin/env node
// Runs before a package is packed (its `prepack` script), in the package's folder.
// - Refuses `npm pack` / `npm publish`: npm keeps the workspace's `workspace:` and `catalog:` ranges, and the
//   tarball then fails to install with no useful message. pnpm rewrites them to real versions.
// - Copies the repository's LICENSE in, so every tarball carries it (one LICENSE file in the repository).
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';

const agent = process.env.npm_config_user_agent ?? '';
if (!agent.startsWith('pnpm/')) {
  console.error(
    'sluice: pack or publish this package with pnpm (node scripts/pnpm.mjs pack, or node scripts/pack.mjs for all of them): ' +
      "npm keeps the workspace's workspace: and catalog: version ranges, and the tarball would not install.",
  );
  process.exit(1);
}
copyFileSync(join(import.meta.dirname, '..', 'LICENSE'), join(process.cwd(), 'LICENSE'));
