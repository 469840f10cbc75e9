import type { Clock } from '@sluice/core';
import { type NodeIdentity, warnOnce, withDeadline } from '@sluice/core/internal';
import {
  type FleetSummary,
  type RedisConnection,
  type HeartbeatRequest as RedisHeartbeatRequest,
  bySlot,
  checkClockSkew,
  membershipKeys,
  runHeartbeat,
} from '@sluice/redis/internal';
import { LEAST_HELD, type ShareMode } from './shares.js';

/** A divided limiter in its store's heartbeat: where its fleet lives, its limit, and what it reports and hears. */
export interface MemberOf {
  readonly prefix: string;
  /** The rule's name: a limiter's fleet is its prefix and rule. */
  readonly rule: string;
  /** The rule's limit per second (what the shares divide; it follows limiter.reconfigure). */
  readonly limitPerSecond: number;
  /** How the limit is divided. */
  readonly mode: ShareMode;
  /** The rule's burst (a window's limit, a bucket's capacity), and whether it is a window. */
  readonly burst: number;
  readonly windowed: boolean;
  /** The part of the limit the shares divide: 1 - the reserve. */
  readonly divided: number;
  /** This node's recent demand, in permits per second. */
  demand(): number;
  /** The live nodes this node last heard its fleet had (0: none yet). */
  knownNodes(): number;
  /** The fleet size this node expects before it heard one (the store's assumedNodes). */
  readonly assumedNodes: number;
  /** The configuration version this node decides the limiter under (live limits). */
  version(): number;
  answered(summary: FleetSummary): void;
  failed(error: Error): void;
}

/** What a store's membership heartbeat needs. */
export interface MembershipOptions {
  readonly redis: RedisConnection;
  /** This node's id (it changes if another live process was given the same one). */
  readonly identity: NodeIdentity;
  readonly heartbeatMs: number;
  /** Decide membership on this clock instead of Redis TIME (tests). */
  readonly clock: Clock | undefined;
  /** This process's clock, compared with Redis's TIME at each heartbeat (SLUICE_CLOCK_SKEW); undefined: not compared. */
  readonly skewClock?: Clock | undefined;
}

/** The keys of a divided limiter's fleet (see membershipKeys in @sluice/redis's key layout). */
export { membershipKeys };
export type { FleetSummary };

/** One heartbeat call of one node for the limiters of one slot, each holding locally at least LEAST_HELD permits. */
export type HeartbeatRequest = Omit<RedisHeartbeatRequest, 'limiters'> & {
  readonly limiters: readonly Omit<RedisHeartbeatRequest['limiters'][number], 'leastHeld'>[];
};

/**
 * Runs membership.lua once for divided mode (see runHeartbeat in @sluice/redis): each limiter's node holds at
 * least LEAST_HELD whole permits locally.
 * @example
 * const [fleet] = await heartbeat(connection, { nodeId: 'a', liveMs: 3000, intervalMs: 1000, nowMs: undefined,
 *   leaving: false, limiters: [{ prefix: 'api', rule: 'fw', limitPerSecond: 1000, demand: 120, mode: 'demand',
 *   burst: 1000, windowed: true, divided: 0.7 }] })
 */
export function heartbeat(redis: RedisConnection, request: HeartbeatRequest): Promise<FleetSummary[]> {
  return runHeartbeat(redis, { ...request, limiters: request.limiters.map((l) => ({ ...l, leastHeld: LEAST_HELD })) });
}

const summaryKey = (member: MemberOf): string => membershipKeys(member.prefix, member.rule)[0];

/**
 * The most heartbeats per second a divided fleet may send its Redis before it is warned (SLUICE_FLEET_HEARTBEATS):
 * at about 20 us each (bench/results/presence.json) a tenth of a Redis core, for one limiter.
 */
const MAX_FLEET_HEARTBEATS_PER_SECOND = 5_000;

/** Warns (once per process) when `nodes` heartbeating every `heartbeatMs` ask the fleet's Redis too often. */
export function warnOfHeartbeatRate(prefix: string, nodes: number, heartbeatMs: number): void {
  if ((nodes * 1_000) / heartbeatMs <= MAX_FLEET_HEARTBEATS_PER_SECOND) return;
  warnOnce(
    'SLUICE_FLEET_HEARTBEATS',
    `divided limiter ${JSON.stringify(prefix)}: ${nodes} nodes heartbeating every ${heartbeatMs} ms ` +
      `(heartbeatMs) ask Redis ${Math.round((nodes * 1_000) / heartbeatMs)} times a second; a fleet this ` +
      `size needs heartbeatMs >= ${Math.ceil((nodes * 1_000) / MAX_FLEET_HEARTBEATS_PER_SECOND)}.`,
  );
}

/**
 * A divided store's heartbeat: every `heartbeatMs`, one call per Cluster slot for all of the store's divided
 * limiters (membership.lua), each reporting this node's demand and hearing its own allocation in the fleet's
 * last two divisions: O(log N) for Redis and a constant reply whatever the fleet's size. A node is live while seen within 3
 * heartbeats. A heartbeat never waits on another (a slow Redis must not pile them up).
 * @example
 * const membership = new Membership({ redis, identity, heartbeatMs: 1000, clock: undefined })
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
  readonly #unwatch: () => void;

  constructor(options: MembershipOptions) {
    this.#o = options;
    // A lost connection fails every limiter at once, not at its next heartbeat (a node whose share is too
    // small to hold then holds its part of the reserve; listening also keeps a client from printing each
    // error); a client that connects again is heard at once, not up to an interval later.
    this.#unwatch = options.redis.watch(
      (error) => {
        this.#failing = true;
        for (const member of this.#members) member.failed(error);
      },
      () => {
        if (this.#failing) this.beatSoon();
      },
    );
  }

  /** Adds a limiter to the heartbeat (its first one at the end of this turn); returns how it leaves. */
  join(member: MemberOf): () => Promise<void> {
    this.#members.add(member);
    if (this.#timer === undefined && !this.#closed) {
      this.#timer = setInterval(() => void this.beat(), this.#o.heartbeatMs);
      // A heartbeat loop must not keep a process alive on its own.
      this.#timer.unref?.();
    }
    this.beatSoon();
    return async () => {
      if (!this.#members.delete(member)) return;
      if (this.#members.size === 0) this.#stop();
      this.#o.identity.forget(summaryKey(member));
      await this.#call([member], true).catch(() => undefined);
    };
  }

  /** One heartbeat for every limiter joined; skipped while the previous one is still out. */
  async beat(): Promise<void> {
    if (this.#inFlight || this.#closed || this.#members.size === 0) return;
    if (this.#failing) {
      this.#o.redis.nudgeReconnect();
      // A call now would wait in the client's queue and could outlive the interval, skipping the next beat
      // (after a long outage: a heartbeat every two intervals); the client's 'ready' beats instead.
      if (!this.#o.redis.connected) return;
    }
    this.#inFlight = true;
    const { identity } = this.#o;
    const id = identity.id;
    let renamed = false;
    try {
      const groups = bySlot(this.#o.redis, this.#members, summaryKey);
      const results = await Promise.allSettled(groups.map((group) => this.#call(group, false)));
      this.#failing = results.some((r) => r.status === 'rejected');
      results.forEach((result, g) => {
        const group = groups[g] as MemberOf[];
        if (result.status === 'rejected') {
          const error = result.reason instanceof Error ? result.reason : new Error(String(result.reason));
          for (const member of group) {
            identity.forget(summaryKey(member));
            member.failed(error);
          }
          return;
        }
        for (const [i, member] of group.entries()) {
          const summary = result.value[i] as FleetSummary;
          if (identity.heard(summaryKey(member), id, summary.seenAt, summary.reused)) renamed = true;
          // A reused id's answer is another process's: this node hears its own under its new id, at once.
          if (!summary.reused) member.answered(summary);
        }
      });
    } finally {
      this.#inFlight = false;
    }
    if (renamed) this.beatSoon();
  }

  /** A heartbeat at the end of this turn (once, however often asked). */
  beatSoon(): void {
    if (this.#closed) return;
    this.#soon ??= setImmediate(() => {
      this.#soon = undefined;
      void this.beat();
    });
  }

  #call(group: readonly MemberOf[], leaving: boolean): Promise<FleetSummary[]> {
    const { redis, identity, heartbeatMs, clock } = this.#o;
    const request: HeartbeatRequest = {
      nodeId: identity.id,
      liveMs: 3 * heartbeatMs,
      intervalMs: heartbeatMs,
      nowMs: clock?.now(),
      leaving,
      limiters: group.map((m) => ({
        prefix: m.prefix,
        rule: m.rule,
        limitPerSecond: m.limitPerSecond,
        demand: leaving ? 0 : m.demand(),
        mode: m.mode,
        burst: m.burst,
        windowed: m.windowed,
        divided: m.divided,
        lastSeen: identity.lastSeen(summaryKey(m)),
        knownNodes: m.knownNodes(),
        assumedNodes: m.assumedNodes,
        version: m.version(),
      })),
    };
    const what = leaving ? 'leaving a membership' : 'a heartbeat';
    const { skewClock } = this.#o;
    const sentAt = skewClock?.now() ?? 0;
    const call = withDeadline(heartbeat(redis, request), heartbeatMs, what);
    if (skewClock === undefined || leaving) return call;
    return call.then((summaries) => {
      const [first] = summaries;
      if (first !== undefined)
        checkClockSkew(sentAt, skewClock.now(), first.redisTimeMs, `limiter ${JSON.stringify(group[0]?.prefix)}`);
      return summaries;
    });
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
    this.#unwatch();
    const members = [...this.#members];
    this.#members.clear();
    await Promise.all(
      bySlot(this.#o.redis, members, summaryKey).map((group) => this.#call(group, true).catch(() => undefined)),
    );
  }
}
