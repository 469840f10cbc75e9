/**
 * A process of the operations tests: ops-child.ts run with `env`, driven by JSON lines, one answer per
 * command, in order. Rejects with everything the child printed if it ends.
 */
import { fileURLToPath } from 'node:url';
import { lineChild } from './line-child.js';

const childScript = fileURLToPath(new URL('./ops-child.ts', import.meta.url));

/**
 * Starts an operations process (see ops-child.ts for its environment and commands) and waits for it to be ready.
 * @example
 * const node = await opsProcess({ REDIS_URL, PREFIX: 'api', ADMIN_TOKEN: 't' })
 * await node.ask({ decide: 'user:1', count: 10 }) // { granted: 5, denied: 5 }
 */
export async function opsProcess(env: Record<string, string>) {
  const child = lineChild(childScript, env, 'the operations process');
  const next = async <T>(): Promise<T> => JSON.parse(await child.nextLine()) as T;
  const ready = await next<{ ready: true; admin: string }>();
  return {
    /** The admin router's URL on this process. */
    admin: ready.admin,
    /** Sends `command` and resolves to its answer. */
    ask: <T = Record<string, unknown>>(command: Record<string, unknown>): Promise<T> => {
      child.send(JSON.stringify(command));
      return next<T>();
    },
    stop: child.stop,
  };
}
