import type { Algorithm } from '@sluice/core';
import type { EngineRules, EngineTime, Heartbeat, HeartbeatAnswer, LeaseAnswer, LeaseAsk } from '@sluice/core/engine';
import { identityOf } from '@sluice/core/internal';
import type { RedisConnection } from '../connection/connection.js';
import { ruleArgs } from '../exact/rule-args.js';
import { runHeartbeat } from '../fleet/heartbeat-call.js';
import { runLease } from '../fleet/lease-call.js';
import { stateKey, versionKeyBeside } from '../key-layout.js';
import { versionError } from '../reply-errors.js';

/**
 * The name of a leased state's lessees beside it: leased mode's (`lessees~` and the rule's state name), so a
 * lease through the engine counts among the lessees leased mode counts.
 */
export const lesseesName = (state: string): string => `lessees~${state}`;

/**
 * redisEngine's `lease`: lease.lua on the rule's state and its lessees, as leased mode's lease client asks it
 * (requestLease).
 */
export async function leaseOnRedis(
  connection: RedisConnection,
  rules: EngineRules,
  ask: LeaseAsk,
  at: EngineTime,
): Promise<LeaseAnswer> {
  const rule = rules.rules[0] as Algorithm;
  const state = rules.states[0] as string;
  const identity = identityOf(rule, ask.key);
  const stateAt = stateKey(rules.prefix, identity, state);
  try {
    const reply = await runLease(connection, {
      stateKey: stateAt,
      lesseesKey: stateKey(rules.prefix, identity, lesseesName(state)),
      kind: rule.kind,
      ruleArgs: ruleArgs([rule]),
      burst: rule.burst,
      want: ask.want,
      nodeId: ask.node,
      liveMs: ask.liveMs,
      nowMs: at,
      hoardingDivisor: ask.hoardingDivisor,
      register: ask.register,
      version:
        rules.version === undefined
          ? undefined
          : { key: versionKeyBeside(rules.prefix, stateAt, connection.isCluster), version: rules.version },
    });
    return {
      granted: reply.granted,
      retryMs: reply.retryMs,
      decidedAtMs: reply.decidedAtMs,
      lessees: reply.liveNodes,
      centralRemaining: reply.centralRemaining,
      registered: reply.registered,
    };
  } catch (error) {
    const newer = versionError(error, 'SLUICE_STALE');
    if (newer !== undefined) return { stale: newer };
    throw error;
  }
}

/** redisEngine's `heartbeat`: membership.lua for one fleet (divided mode's membership keys of its prefix and fleet name), as divided mode's Membership asks it. */
export async function heartbeatOnRedis(
  connection: RedisConnection,
  beat: Heartbeat,
  at: EngineTime,
): Promise<HeartbeatAnswer> {
  const [summary] = await runHeartbeat(connection, {
    nodeId: beat.node,
    liveMs: beat.liveMs,
    intervalMs: beat.intervalMs,
    nowMs: at,
    leaving: beat.leaving,
    limiters: [
      {
        prefix: beat.prefix,
        rule: beat.fleet,
        limitPerSecond: beat.limit,
        demand: beat.demand,
        mode: beat.division,
        burst: beat.burst,
        windowed: beat.windowed,
        divided: beat.divided,
        leastHeld: beat.minLocal,
        lastSeen: beat.lastAt === undefined ? '' : String(beat.lastAt),
        knownNodes: beat.knownNodes,
        assumedNodes: beat.assumedNodes,
        version: beat.version,
      },
    ],
  });
  if (summary === undefined) throw new Error('membership.lua answered no fleet');
  return {
    at: Number(summary.seenAt),
    engineNowMs: summary.redisTimeMs,
    nodes: summary.nodes,
    current: summary.current,
    previous: summary.previous,
    founded: summary.founded,
    reserve: summary.reserve,
    idTaken: summary.reused,
    version: summary.version,
  };
}
