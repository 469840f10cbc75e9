#!/usr/bin/env node
// Packs every package (scripts/pack.mjs) and checks each tarball as a registry would serve it: publint
// (--strict: warnings fail too) and Are the Types Wrong (every entry point under node10, node16 from CJS and
// from ESM, and bundlers). Prints both reports; exits 1 on any problem. Build first (npm run build).
//   node scripts/check-packages.mjs [tarball...]
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
let tarballs = process.argv.slice(2);
if (tarballs.length === 0) {
  const packed = spawnSync(
    process.execPath,
    [join(root, 'scripts', 'pack.mjs'), mkdtempSync(join(tmpdir(), 'sluice-packs-'))],
    { encoding: 'utf8' },
  );
  if (packed.status !== 0) {
    console.error(packed.stderr);
    process.exit(1);
  }
  tarballs = packed.stdout.trim().split('\n');
}
let failed = false;
for (const tarball of tarballs) {
  for (const [tool, args] of [
    ['publint', ['run', tarball, '--strict']],
    ['attw', [tarball, '--format', 'ascii']],
  ]) {
    const r = spawnSync(bin(tool), args, { encoding: 'utf8' });
    console.log(`== ${tool} ${tarball}\n${r.stdout.trim()}${r.stderr.trim() ? `\n${r.stderr.trim()}` : ''}`);
    if (r.status !== 0) failed = true;
  }
}
process.exit(failed ? 1 : 0);
