/**
 * Runs an example program the way the README does (TypeScript sources through tsx) and reads what it prints.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface RunningExample {
  readonly child: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first match of `pattern` in the output, or rejects after `maxWaitMs` or on exit. */
  waitFor(pattern: RegExp, maxWaitMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export function runExample(
  script: string,
  env: Record<string, string> = {},
  args: readonly string[] = [],
): RunningExample {
  const child = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', script, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    waitFor(pattern, maxWaitMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = text.match(pattern);
          if (m) {
            done();
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${pattern} within ${maxWaitMs} ms; output:\n${text}`));
        }, maxWaitMs);
        const onExit = () => {
          done();
          reject(new Error(`exited before printing ${pattern}; output:\n${text}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs a program to its end; resolves with its exit code and output. */
export async function runToEnd(script: string, maxWaitMs = 60_000): Promise<{ code: number | null; output: string }> {
  const example = runExample(script);
  const timer = setTimeout(() => example.child.kill('SIGKILL'), maxWaitMs);
  const code = await new Promise<number | null>((resolve) => example.child.once('exit', resolve));
  clearTimeout(timer);
  return { code, output: example.output() };
}
