/** Runs every benchmark in its own process (with --expose-gc for heap figures), then draws the plots from their results. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const benches = [
  'core.bench.ts',
  'redis.bench.ts',
  'lone-script.bench.ts',
  'hybrid.bench.ts',
  'presence.bench.ts',
  'deadline.bench.ts',
  'fleet.bench.ts',
  'render-plots.ts',
];
for (const file of benches) {
  const path = fileURLToPath(new URL(`./${file}`, import.meta.url));
  const r = spawnSync(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', path], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
