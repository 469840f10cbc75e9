#!/usr/bin/env node
// Packs every package of packages/ into one folder (default: ./packs), as `pnpm pack` makes them: the
// workspace's version ranges rewritten, dist/ only, README and LICENSE in. Build first (npm run build).
//   node scripts/pack.mjs [destination]
// Prints one line per tarball: its path.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = join(import.meta.dirname, '..');
const destination = resolve(process.argv[2] ?? join(root, 'packs'));
mkdirSync(destination, { recursive: true });
for (const name of readdirSync(join(root, 'packages')).sort()) {
  const r = spawnSync(
    process.execPath,
    [join(root, 'scripts', 'pnpm.mjs'), 'pack', '--pack-destination', destination],
    {
      cwd: join(root, 'packages', name),
      encoding: 'utf8',
      env: { ...process.env, COREPACK_INTEGRITY_KEYS: '0' },
    },
  );
  if (r.status !== 0) {
    console.error(r.stdout, r.stderr);
    process.exit(r.status ?? 1);
  }
  const tarball = r.stdout.trim().split('\n').pop();
  console.log(tarball);
}
