#!/usr/bin/env node
// Runs the pnpm pinned by package.json#packageManager, however this machine can get it.
// Corepack's signature check fails against some registry mirrors, so we fall back to
// corepack without the check, then to npx. Usage: node scripts/pnpm.mjs <pnpm args...>
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pinned = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager;
const version = /^pnpm@(\d+\.\d+\.\d+)/.exec(pinned ?? '')?.[1];
if (!version) {
  console.error(`package.json#packageManager must pin pnpm, got ${JSON.stringify(pinned)}`);
  process.exit(2);
}

const quiet = { COREPACK_ENABLE_DOWNLOAD_PROMPT: '0', npm_config_yes: 'true' };
const candidates = [
  { cmd: 'pnpm', pre: [], env: {} },
  { cmd: 'corepack', pre: ['pnpm'], env: quiet },
  { cmd: 'corepack', pre: ['pnpm'], env: { ...quiet, COREPACK_INTEGRITY_KEYS: '0' } },
  { cmd: 'npx', pre: ['--yes', `pnpm@${version}`], env: quiet },
];

function works(c) {
  const r = spawnSync(c.cmd, [...c.pre, '--version'], {
    cwd: root,
    env: { ...process.env, ...c.env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return r.status === 0 && r.stdout.trim() === version;
}

const chosen = candidates.find(works);
if (!chosen) {
  console.error(`could not run pnpm@${version} through PATH, corepack or npx`);
  process.exit(2);
}
const run = spawnSync(chosen.cmd, [...chosen.pre, ...process.argv.slice(2)], {
  cwd: process.cwd(),
  env: { ...process.env, ...chosen.env },
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
