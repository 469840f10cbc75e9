/**
 * A child that answers one line per line it is sent, in order (live-child.ts, ops-child.ts): the lines it
 * prints are handed out as they come; a child that ends rejects every wait with everything it printed.
 */
import { createInterface } from 'node:readline';
import { tsxChild } from './tsx-child.js';

/**
 * Starts `script` with `env` (see tsxChild); `what` names it in the error when it ends.
 * @example
 * const child = lineChild(script, { REDIS_URL }, 'the other process')
 * child.send('decide 10 k')
 * const answer = await child.nextLine()
 */
export function lineChild(script: string, env: Record<string, string>, what: string) {
  const child = tsxChild(script, env);
  let output = '';
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    output += `${line}\n`;
    const waiter = waiting.shift();
    if (waiter !== undefined) waiter(line);
    else lines.push(line);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${what} ended (${code}):\n${output}`))),
  );
  exited.catch(() => undefined);
  return {
    /** The next line the child prints (one already printed and not yet handed out first). */
    nextLine: (): Promise<string> =>
      Promise.race([
        lines.length > 0 ? Promise.resolve(lines.shift() as string) : new Promise<string>((r) => waiting.push(r)),
        exited,
      ]),
    send: (line: string): void => {
      child.stdin.write(`${line}\n`);
    },
    stop: (): void => {
      child.stdin.end();
      child.kill();
    },
  };
}
