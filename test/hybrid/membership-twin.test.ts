/**
 * The memory engine's heartbeat is membership.lua's twin: random fleets (joins, beats, demand changes, leaves,
 * silences, a node id reused) heartbeat both, at the same client times, and every answer agrees to the bit.
 */
import { toConnection } from '@sluice/redis/internal';
import { memoryEngine } from '@sluice/core/engine';
import { describe, expect, it } from 'vitest';
import { Prng } from '../../packages/core/src/contract/conformance/prng.js';
import { heartbeat } from '../harness/membership-script.js';
import { LEAST_HELD } from '../../packages/hybrid/src/shares.js';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
const LIVE_MS = 3_000;
const INTERVAL_MS = 1_000;

describe('memoryEngine.heartbeat is membership.lua', () => {
  it.each([1, 2, 3, 4, 5, 6])('seed %i', async (seed) => {
    const rng = new Prng(seed);
    const engine = memoryEngine();
    const prefix = `twin${Date.now()}-${seed}`;
    const mode = rng.pick(['equal', 'demand'] as const);
    const divided = rng.pick([1, 0.7]);
    const windowed = rng.chance(0.5);
    const burst = rng.pick([10, 100, 1_000]);
    const limit = rng.pick([5, 100, 2_500]);
    const assumedNodes = rng.pick([1, 3]);
    const nodes = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id, lastAt: undefined as number | undefined, known: 0 }));
    let now = 1_767_225_600_000 + seed * 1_000;
    for (let step = 0; step < 120; step++) {
      now += rng.pick([0, 5, 100, 400, 1_000, 1_500]);
      const node = rng.pick(nodes);
      const leaving = rng.chance(0.07);
      const demand = rng.pick([0, 1, 10, 40, 80, 200, 5_000]);
      // Sometimes another process writes under the node's id (its own last write unknown).
      const lastAt = rng.chance(0.05) ? undefined : node.lastAt;
      const [lua] = await heartbeat(toConnection(redis().redis), {
        nodeId: node.id,
        liveMs: LIVE_MS,
        intervalMs: INTERVAL_MS,
        nowMs: now,
        leaving,
        limiters: [
          {
            prefix,
            rule: 'fw',
            limitPerSecond: limit,
            demand,
            mode,
            burst,
            windowed,
            divided,
            lastSeen: lastAt === undefined ? '' : String(lastAt),
            knownNodes: node.known,
            assumedNodes,
            version: 1,
          },
        ],
      });
      const mine = await engine.heartbeat(
        {
          prefix,
          fleet: 'fw',
          node: node.id,
          leaving,
          liveMs: LIVE_MS,
          intervalMs: INTERVAL_MS,
          limit,
          burst,
          demand: leaving ? 0 : demand,
          division: mode,
          divided,
          windowed,
          minLocal: LEAST_HELD,
          lastAt,
          knownNodes: node.known,
          assumedNodes,
          version: 1,
        },
        now,
      );
      const where = `step ${step}: ${node.id} ${leaving ? 'leaves' : 'beats'} at ${now}`;
      expect(
        {
          nodes: Math.max(1, mine.nodes),
          current: mine.current,
          previous: mine.previous,
          founded: mine.founded,
          reserve: mine.reserve,
          reused: mine.idTaken,
          version: mine.version,
          at: mine.at,
        },
        where,
      ).toEqual({
        nodes: lua?.nodes,
        current: lua?.current,
        previous: lua?.previous,
        founded: lua?.founded,
        reserve: lua?.reserve,
        reused: lua?.reused,
        version: lua?.version,
        at: Number(lua?.seenAt),
      });
      if (!mine.idTaken) node.lastAt = mine.at;
      node.known = mine.nodes;
    }
  });
});
