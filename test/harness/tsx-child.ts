/** A TypeScript program run as a child process the way the tests and examples run one: node with tsx, on the sources. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';

/**
 * Starts `script` (a .ts path) with `env` over this process's environment, its stdio piped.
 * @example
 * const child = tsxChild(fileURLToPath(new URL('./live-child.ts', import.meta.url)), { REDIS_URL })
 */
export function tsxChild(script: string, env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', script], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
