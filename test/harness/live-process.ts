/**
 * The other process of the live-limits tests: live-child.ts run with `env` (its mode, rule and server), driven
 * line by line. Each call waits for the child's answer, or rejects with everything it printed if it ends.
 */
import { fileURLToPath } from 'node:url';
import { lineChild } from './line-child.js';
import { expect } from 'vitest';
import type { TestCluster } from './redis-cluster.js';
import type { TestRedis } from './redis-server.js';

const childScript = fileURLToPath(new URL('./live-child.ts', import.meta.url));

/** What the other process's decisions said: grants, and the version, limit and remaining of the last one. */
export interface ChildResult {
  readonly granted: number;
  readonly version: number;
  readonly limit: number;
  readonly remaining: number;
}

/** The environment that points live-child.ts at a test server: a standalone one or a Cluster. */
export function serverEnv(
  name: string,
  testRedis: () => { server: TestRedis },
  testCluster: () => { cluster: TestCluster },
): Record<string, string> {
  return name === 'Cluster'
    ? { CLUSTER_NODES: JSON.stringify(testCluster().cluster.startupNodes) }
    : { REDIS_URL: testRedis().server.url };
}

/**
 * Starts the other process (see live-child.ts for its environment and commands).
 * @example
 * const other = otherProcess({ REDIS_URL, PREFIX, MODE: 'leased', CAPACITY: '100' })
 * await other.ready()
 * await other.decide(10, 'k') // { granted, version, limit, remaining }
 */
export function otherProcess(env: Record<string, string>) {
  const child = lineChild(childScript, env, 'the other process');
  const { nextLine } = child;
  /** Sends `command` and waits for its answer line. */
  const ask = async (command: string): Promise<string> => {
    child.send(command);
    return nextLine();
  };
  return {
    ready: async () => expect(await nextLine()).toBe('READY'),
    decide: async (count: number, key: string): Promise<ChildResult> => {
      const line = await ask(`decide ${count} ${key}`);
      expect(line).toMatch(/^RESULT /);
      return JSON.parse(line.slice('RESULT '.length)) as ChildResult;
    },
    /** Once the other process decides under configuration `version` or later. */
    version: async (version: number) => expect(await ask(`version ${version}`)).toBe(`VERSION ${version}`),
    /** Divided mode: once the other process holds `share` of the limit. */
    share: async (share: number) => expect(await ask(`share ${share}`)).toBe(`SHARE ${share}`),
    stop: child.stop,
  };
}
