/**
 * membership.lua called on its own, as the tests of the script (and of its twin) make it: divided mode calls
 * it through the engine contract (Membership over redisEngine, whose heartbeats of one turn leave together).
 */
import { type FleetSummary, type HeartbeatRequest, type RedisConnection, runHeartbeat } from '@sluice/redis/internal';
import { LEAST_HELD } from '../../packages/hybrid/src/shares.js';

export { membershipKeys } from '@sluice/redis/internal';
export type { FleetSummary };

/** One membership.lua call, each limiter's node holding at least LEAST_HELD permits locally (as divided mode asks). */
export function heartbeat(
  connection: RedisConnection,
  request: Omit<HeartbeatRequest, 'limiters'> & {
    readonly limiters: readonly Omit<HeartbeatRequest['limiters'][number], 'leastHeld'>[];
  },
): Promise<FleetSummary[]> {
  return runHeartbeat(connection, {
    ...request,
    limiters: request.limiters.map((l) => ({ ...l, leastHeld: LEAST_HELD })),
  });
}
