import type { Algorithm } from '@sluice/core';
import type { EngineRules, EngineTime, Heartbeat, HeartbeatAnswer, LeaseAnswer, LeaseAsk } from '@sluice/core/engine';
import { identityOf } from '@sluice/core/internal';
import type { RedisConnection } from '../connection/connection.js';
import { ruleArgs } from '../exact/rule-args.js';
import { type FleetSummary, runHeartbeat } from '../fleet/heartbeat-call.js';
import { runLease } from '../fleet/lease-call.js';
import { membershipKeys, stateKey, versionKeyBeside } from '../key-layout.js';
import { bySlot } from '../slots.js';
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

/** A heartbeat waiting for the others asked with it, and its caller's answer. */
interface PendingBeat {
  readonly beat: Heartbeat;
  readonly at: EngineTime;
  resolve(answer: HeartbeatAnswer): void;
  reject(error: unknown): void;
}

/**
 * redisEngine's `heartbeat`: membership.lua, on divided mode's membership keys of the beat's prefix and fleet
 * name. The heartbeats asked together (in one run of code, before it awaits: a divided store asks all of its
 * limiters' so) leave together once it ends (a microtask), one call per Cluster slot for every fleet of one
 * node that beats at the same time with the same intervals: a store's 16 divided limiters cost one call on a
 * standalone server, as they did before the engine. Each caller hears its own fleet's answer, or the error of
 * its own slot's call (a primary that is away fails only the fleets it holds).
 * @example
 * const beats = new HeartbeatBatcher(connection)
 * const answer = await beats.beat(beat, undefined) // sent with the others asked before this code awaits
 */
export class HeartbeatBatcher {
  readonly #connection: RedisConnection;
  #queue: PendingBeat[] = [];

  constructor(connection: RedisConnection) {
    this.#connection = connection;
  }

  beat(beat: Heartbeat, at: EngineTime): Promise<HeartbeatAnswer> {
    return new Promise<HeartbeatAnswer>((resolve, reject) => {
      if (this.#queue.length === 0) queueMicrotask(() => this.#flush());
      this.#queue.push({ beat, at, resolve, reject });
    });
  }

  #flush(): void {
    const queue = this.#queue;
    this.#queue = [];
    // membership.lua takes one node, its intervals, one time and one leaving for all the fleets of a call.
    const calls = new Map<string, PendingBeat[]>();
    for (const pending of queue) {
      const { node, liveMs, intervalMs, leaving } = pending.beat;
      const id = JSON.stringify([node, liveMs, intervalMs, leaving, pending.at ?? null]);
      const call = calls.get(id);
      if (call === undefined) calls.set(id, [pending]);
      else call.push(pending);
    }
    for (const call of calls.values())
      for (const group of bySlot(this.#connection, call, (p) => membershipKeys(p.beat.prefix, p.beat.fleet)[0]))
        void this.#send(group);
  }

  async #send(group: readonly PendingBeat[]): Promise<void> {
    const [first] = group as [PendingBeat];
    const { node, liveMs, intervalMs, leaving } = first.beat;
    try {
      const summaries = await runHeartbeat(this.#connection, {
        nodeId: node,
        liveMs,
        intervalMs,
        nowMs: first.at,
        leaving,
        limiters: group.map(({ beat }) => ({
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
        })),
      });
      group.forEach((pending, i) => {
        const summary = summaries[i];
        if (summary === undefined) pending.reject(new Error('membership.lua answered fewer fleets than asked'));
        else pending.resolve(answerOf(summary));
      });
    } catch (error) {
      for (const pending of group) pending.reject(error);
    }
  }
}

/** A fleet's answer as the contract says it, from membership.lua's. */
function answerOf(summary: FleetSummary): HeartbeatAnswer {
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
