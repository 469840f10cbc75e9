/**
 * lease.lua and adjust.lua's refund called on raw keys, as the tests of the scripts themselves (and of their
 * twins) make them: leased mode calls them through the engine contract (CentralLeases over redisEngine).
 */
import { type LeaseReply, type LeaseShape, leaseReply } from '../../packages/hybrid/src/lease-client.js';
import { type RedisConnection, adjustArgs, adjustScript, ruleArgs, runLease } from '@sluice/redis/internal';

/** One lease.lua call: up to `want` permits of `stateKey` under `shape`, `nodeId` counted in `lesseesKey`. */
export async function leaseByScript(
  connection: RedisConnection,
  request: {
    readonly stateKey: string;
    readonly lesseesKey: string;
    readonly shape: LeaseShape;
    readonly want: number;
    readonly nodeId: string;
    readonly liveMs: number;
    readonly nowMs: number | undefined;
    readonly hoardingDivisor: number | undefined;
    readonly register?: boolean;
  },
): Promise<LeaseReply> {
  const { rule } = request.shape;
  const reply = await runLease(connection, {
    stateKey: request.stateKey,
    lesseesKey: request.lesseesKey,
    kind: rule.kind,
    ruleArgs: ruleArgs([rule]),
    burst: rule.burst,
    want: request.want,
    nodeId: request.nodeId,
    liveMs: request.liveMs,
    nowMs: request.nowMs,
    hoardingDivisor: request.hoardingDivisor,
    register: request.register !== false,
    version: undefined,
  });
  return leaseReply(request.shape, { ...reply, lessees: reply.liveNodes });
}

/** adjust.lua's refund of `permits` leased at `leasedAtMs` (the lease's decidedAtMs) into `stateKey`. */
export async function refundByScript(
  connection: RedisConnection,
  stateKey: string,
  shape: LeaseShape,
  permits: number,
  leasedAtMs: number,
  nowMs: number | undefined,
): Promise<void> {
  await connection.runScript(
    adjustScript([shape.rule.kind]),
    [stateKey],
    adjustArgs(ruleArgs([shape.rule]), 'refund', permits, { atMs: leasedAtMs }, nowMs),
  );
}
