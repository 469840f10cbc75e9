import type { Heartbeat } from '../engine.js';

/**
 * A heartbeat of node `n` in fleet `f` of `prefix`: a fleet of one of a small equal limit, changed by `changes`
 * (the cases' and tests' one builder).
 * @example
 * beatOf('api', { node: 'b', demand: 40 })
 */
export function beatOf(prefix: string, changes: Partial<Heartbeat> = {}): Heartbeat {
  return {
    prefix,
    fleet: 'f',
    node: 'n',
    leaving: false,
    liveMs: 3_000,
    intervalMs: 1_000,
    limit: 10,
    burst: 10,
    demand: 1,
    division: 'equal',
    divided: 1,
    windowed: true,
    minLocal: 1,
    lastAt: undefined,
    knownNodes: 0,
    assumedNodes: 1,
    version: 1,
    ...changes,
  };
}
