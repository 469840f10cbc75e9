/**
 * Divided mode's heartbeats of one turn leave together (61355141: redisEngine's HeartbeatBatcher sends the
 * fleets of one node, time and intervals as one membership.lua call per slot). A store that decides on the
 * client's clock (`dividedStore({ clock: 'client' })`, or a Clock of the user's own) gives Membership a moving
 * clock: the heartbeats of one turn must still carry one time, or each fleet costs a call of its own again.
 */
import { type Clock, systemClock } from '@sluice/core';
import type { HeartbeatAnswer } from '@sluice/core/engine';
import { NodeIdentity } from '@sluice/core/internal';
import { engineOnConnection, toConnection } from '@sluice/redis/internal';
import { describe, expect, it } from 'vitest';
import { type MemberOf, Membership } from '../../packages/hybrid/src/membership.js';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
let n = 0;

/** Script calls the server ran (EVAL, EVALSHA, FCALL): one per membership.lua call. */
async function scriptCalls(): Promise<number> {
  const info = await redis().redis.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/cmdstat_(eval|evalsha|fcall):calls=(\d+)/g)) total += Number(m[2]);
  return total;
}

/** `count` divided limiters of one prefix; resolves once each has heard its first answer. */
function members(prefix: string, count: number): { list: MemberOf[]; heard: Promise<void> } {
  let answered = 0;
  let done: () => void = () => {};
  const heard = new Promise<void>((resolve) => {
    done = resolve;
  });
  const list = Array.from(
    { length: count },
    (_, i): MemberOf => ({
      prefix,
      rule: `r${i}`,
      limitPerSecond: 100,
      mode: 'equal',
      burst: 100,
      windowed: false,
      divided: 1,
      demand: () => 1,
      knownNodes: () => 0,
      assumedNodes: 1,
      version: () => 1,
      answered: (_answer: HeartbeatAnswer) => {
        if (++answered === count) done();
      },
      failed: () => {},
    }),
  );
  return { list, heard };
}

describe('Membership: the heartbeats of one turn carry one time', () => {
  it.each([
    ['the engine clock', undefined],
    ["the client's clock (clock: 'client')", systemClock],
  ] as const)('on %s, 16 limiters cost one membership.lua call per turn', async (_name, clock: Clock | undefined) => {
    const connection = toConnection(redis().redis);
    const membership = new Membership({
      engine: engineOnConnection(connection, undefined),
      link: connection,
      identity: new NodeIdentity(`node-${n}`, () => {}),
      heartbeatMs: 600_000,
      clock,
    });
    try {
      const { list, heard } = members(`turn-clock-${Date.now()}-${n++}`, 16);
      for (const member of list) membership.join(member);
      await heard;
      const before = await scriptCalls();
      await membership.beat();
      expect((await scriptCalls()) - before).toBe(1);
    } finally {
      await membership.close();
    }
  });
});
