import type { Clock } from '@sluice/core';
import { describeValue } from '@sluice/core/store-kit';
import { type RedisConnection, bySlot, stateKey, withDeadline } from '@sluice/redis/store-kit';
import { membershipScript } from './scripts.js';

/** One divided limiter's fleet, as its heartbeat answers it. */
export interface FleetSummary {
  /** Live nodes of the limiter's fleet (this one included). */
  readonly nodes: number;
  /** The water level of the max-min fair division, in permits per second (Infinity: every node gets its ask). */
  readonly level: number;
  /** What nobody asked for, per node, in permits per second (split equally). */
  readonly spare: number;
}

/** A divided limiter in its store's heartbeat: where its fleet lives, its limit, and what it reports and hears. */
export interface MemberOf {
  readonly prefix: string;
  /** The rule's name: a limiter's fleet is its prefix and rule. */
  readonly rule: string;
  /** The rule's limit per second. */
  readonly limitPerSecond: number;
  /** This node's recent demand, in permits per second. */
  demand(): number;
  answered(summary: FleetSummary): void;
  failed(error: Error): void;
}

/** What a store's membership heartbeat needs. */
export interface MembershipOptions {
  readonly redis: RedisConnection;
  readonly nodeId: string;
  readonly heartbeatMs: number;
  /** Decide membership on this clock instead of Redis TIME (tests). */
  readonly clock: Clock | undefined;
}

/**
 * The keys of a divided limiter's fleet: its live nodes, their demands and the fleet's summary, under the
 * limiter's prefix with the prefix and rule as hash tag, so each limiter's fleet lives in a slot of its own and
 * the limiters of all services spread over a Cluster; '~' keeps them apart from every rule's state.
 * @example
 * membershipKeys('api', 'fw') // ['api:{api~fw}:~members', 'api:{api~fw}:~demands', 'api:{api~fw}:~summary']
 */
export function membershipKeys(prefix: string, rule: string): [string, string, string] {
  const identity = `${prefix}~${rule}`;
  return [
    stateKey(prefix, identity, '~members'),
    stateKey(prefix, identity, '~demands'),
    stateKey(prefix, identity, '~summary'),
  ];
}

/** One heartbeat call of one node for the limiters of one slot (what membership.lua takes). */
export interface HeartbeatRequest {
  readonly nodeId: string;
  /** How long a node counts as live after its last heartbeat, in ms. */
  readonly liveMs: number;
  /** The heartbeat interval: the summary is computed again once it is this old, in ms. */
  readonly intervalMs: number;
  /** Now on the client clock, or undefined for Redis TIME. */
  readonly nowMs: number | undefined;
  /** The node leaves these limiters' fleets instead of reporting to them. */
  readonly leaving: boolean;
  readonly limiters: readonly { prefix: string; rule: string; limitPerSecond: number; demand: number }[];
}

/**
 * Runs membership.lua once: reports this node to (or takes it out of) each limiter's fleet and answers each
 * fleet's summary, in the order of `request.limiters`, which must share one Cluster slot.
 * @example
 * const [fleet] = await heartbeat(connection, { nodeId: 'a', liveMs: 3000, intervalMs: 1000, nowMs: undefined,
 *   leaving: false, limiters: [{ prefix: 'api', rule: 'fw', limitPerSecond: 1000, demand: 120 }] })
 */
export async function heartbeat(redis: RedisConnection, request: HeartbeatRequest): Promise<FleetSummary[]> {
  const { nodeId, liveMs, intervalMs, nowMs, leaving, limiters } = request;
  const args = [nodeId, String(liveMs), nowMs === undefined ? '' : String(nowMs), leaving ? '1' : '0'];
  args.push(String(intervalMs));
  for (const l of limiters) args.push(String(l.limitPerSecond), String(leaving ? 0 : l.demand));
  const keys = limiters.flatMap((l) => membershipKeys(l.prefix, l.rule));
  const reply = await redis.runScript(membershipScript(), keys, args);
  if (!Array.isArray(reply) || reply.length !== 3 * limiters.length)
    throw new TypeError(
      `the ${membershipScript().name} script answered ${describeValue(reply)}, not 3 numbers per limiter`,
    );
  const values = reply.map((v) => String(v));
  return limiters.map((_, i) => {
    const [nodes, level, spare] = values.slice(3 * i, 3 * i + 3);
    return {
      nodes: Math.max(1, Number(nodes) || 0),
      level: level === undefined || level === 'inf' ? Number.POSITIVE_INFINITY : Number(level),
      spare: Number(spare) || 0,
    };
  });
}

const summaryKey = (member: MemberOf): string => membershipKeys(member.prefix, member.rule)[0];

/**
 * A divided store's heartbeat: every `heartbeatMs`, one call per Cluster slot for all of the store's divided
 * limiters (membership.lua), each reporting this node's demand and hearing a summary of its fleet in three
 * numbers: O(log N) for Redis and a constant reply whatever the fleet's size. A node is live while seen within 3
 * heartbeats. A heartbeat never waits on another (a slow Redis must not pile them up).
 * @example
 * const membership = new Membership({ redis, nodeId, heartbeatMs: 1000, clock: undefined })
 * const leave = membership.join(member) // member.answered(summary) every heartbeat
 */
export class Membership {
  readonly #o: MembershipOptions;
  readonly #members = new Set<MemberOf>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #soon: ReturnType<typeof setImmediate> | undefined;
  #inFlight = false;
  /** A failing heartbeat asks a client in its reconnect backoff to connect now. */
  #failing = false;
  #closed = false;

  constructor(options: MembershipOptions) {
    this.#o = options;
  }

  /** Adds a limiter to the heartbeat (its first one at the end of this turn); returns how it leaves. */
  join(member: MemberOf): () => Promise<void> {
    this.#members.add(member);
    if (this.#timer === undefined && !this.#closed) {
      this.#timer = setInterval(() => void this.beat(), this.#o.heartbeatMs);
      // A heartbeat loop must not keep a process alive on its own.
      this.#timer.unref?.();
    }
    this.#soon ??= setImmediate(() => {
      this.#soon = undefined;
      void this.beat();
    });
    return async () => {
      if (!this.#members.delete(member)) return;
      if (this.#members.size === 0) this.#stop();
      await this.#call([member], true).catch(() => undefined);
    };
  }

  /** One heartbeat for every limiter joined; skipped while the previous one is still out. */
  async beat(): Promise<void> {
    if (this.#inFlight || this.#closed || this.#members.size === 0) return;
    this.#inFlight = true;
    if (this.#failing) this.#o.redis.nudgeReconnect();
    try {
      const groups = bySlot(this.#o.redis, this.#members, summaryKey);
      const results = await Promise.allSettled(groups.map((group) => this.#call(group, false)));
      this.#failing = results.some((r) => r.status === 'rejected');
      results.forEach((result, g) => {
        const group = groups[g] as MemberOf[];
        if (result.status === 'rejected') {
          const error = result.reason instanceof Error ? result.reason : new Error(String(result.reason));
          for (const member of group) member.failed(error);
          return;
        }
        for (const [i, member] of group.entries()) member.answered(result.value[i] as FleetSummary);
      });
    } finally {
      this.#inFlight = false;
    }
  }

  #call(group: readonly MemberOf[], leaving: boolean): Promise<FleetSummary[]> {
    const { redis, nodeId, heartbeatMs, clock } = this.#o;
    const request: HeartbeatRequest = {
      nodeId,
      liveMs: 3 * heartbeatMs,
      intervalMs: heartbeatMs,
      nowMs: clock?.now(),
      leaving,
      limiters: group.map((m) => ({
        prefix: m.prefix,
        rule: m.rule,
        limitPerSecond: m.limitPerSecond,
        demand: leaving ? 0 : m.demand(),
      })),
    };
    const what = leaving ? 'leaving a membership' : 'a heartbeat';
    return withDeadline(heartbeat(redis, request), heartbeatMs, what);
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#soon !== undefined) clearImmediate(this.#soon);
    this.#soon = undefined;
  }

  /** Stops heartbeating and leaves every membership (one last call per slot), so the others take up the shares. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    const members = [...this.#members];
    this.#members.clear();
    await Promise.all(
      bySlot(this.#o.redis, members, summaryKey).map((group) => this.#call(group, true).catch(() => undefined)),
    );
  }
}
