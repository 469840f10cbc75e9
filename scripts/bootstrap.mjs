#!/usr/bin/env node
// Installs the workspace's dependencies when they are missing or stale, so that the README's
// two commands work on a fresh clone. A stamp of the lockfile and manifests makes reruns free.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampFile = join(root, 'node_modules', '.sluice-bootstrap');

function manifests() {
  const files = ['package.json', 'pnpm-workspace.yaml', 'pnpm-lock.yaml'];
  for (const group of ['packages', 'examples']) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) files.push(join(group, name, 'package.json'));
  }
  files.push('bench/package.json', 'test/package.json', 'test/kit/package.json');
  return files.filter((f) => existsSync(join(root, f)));
}

const hash = createHash('sha256');
for (const f of manifests()) hash.update(f).update(readFileSync(join(root, f)));
const stamp = hash.digest('hex');

if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) process.exit(0);

const frozen = existsSync(join(root, 'pnpm-lock.yaml')) ? ['--frozen-lockfile'] : [];
console.log('sluice: installing dependencies (first run)…');
const r = spawnSync(process.execPath, [join(root, 'scripts', 'pnpm.mjs'), 'install', ...frozen], {
  cwd: root,
  stdio: 'inherit',
});
if (r.status !== 0) process.exit(r.status ?? 1);
writeFileSync(stampFile, stamp);
