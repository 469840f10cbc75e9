/**
 * A process of the throttle fleet tests: throttle-child.ts run with `env`, driven line by line. `ask` sends a
 * command and waits for the line that answers it; every line is kept, so the starts it prints are read after.
 */
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { tsxChild } from './tsx-child.js';

const childScript = fileURLToPath(new URL('./throttle-child.ts', import.meta.url));

/** A line the child printed, split: its word and its arguments. */
export interface ChildLine {
  readonly word: string;
  readonly args: readonly string[];
}

/**
 * Starts a throttle process (see throttle-child.ts for its environment and commands).
 * @example
 * const node = throttleProcess({ REDIS_URL, PREFIX, LIMIT: '3', WINDOW_MS: '1000' })
 * await node.until('READY')
 * await node.ask('run 1', 'ARRIVED')
 */
export function throttleProcess(env: Record<string, string>) {
  const child = tsxChild(childScript, env);
  let output = '';
  const lines: ChildLine[] = [];
  const waiters: Array<{ word: string; from: number; resolve: (line: ChildLine) => void }> = [];
  const counters: Array<{ word: string; count: number; resolve: () => void }> = [];
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  createInterface({ input: child.stdout }).on('line', (text) => {
    output += `${text}\n`;
    const [word = '', ...args] = text.split(' ');
    lines.push({ word, args });
    for (const waiter of [...waiters]) {
      if (waiter.word !== word) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve({ word, args });
    }
    for (const counter of [...counters]) {
      if (lines.filter((line) => line.word === counter.word).length < counter.count) continue;
      counters.splice(counters.indexOf(counter), 1);
      counter.resolve();
    }
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the throttle process ended (${code}):\n${output}`))),
  );
  exited.catch(() => undefined);
  /** The first line printed with `word` from line `from` on (waits for it). */
  const until = (word: string, from = 0): Promise<ChildLine> => {
    const seen = lines.slice(from).find((line) => line.word === word);
    if (seen !== undefined) return Promise.resolve(seen);
    return Promise.race([new Promise<ChildLine>((resolve) => waiters.push({ word, from, resolve })), exited]);
  };
  return {
    until,
    /** Sends `command` and waits for the next line with `word`. */
    ask: (command: string, word: string): Promise<ChildLine> => {
      const from = lines.length;
      child.stdin.write(`${command}\n`);
      return until(word, from);
    },
    /** Resolves once `count` lines with `word` were printed. */
    counted: (word: string, count: number): Promise<void> => {
      if (lines.filter((line) => line.word === word).length >= count) return Promise.resolve();
      return Promise.race([new Promise<void>((resolve) => counters.push({ word, count, resolve })), exited]);
    },
    /** Every line printed so far with `word`. */
    printed: (word: string): ChildLine[] => lines.filter((line) => line.word === word),
    stop: () => {
      child.stdin.end();
      child.kill();
    },
    /** kill -9: the process dies holding whatever it held. */
    kill: () => child.kill('SIGKILL'),
  };
}
