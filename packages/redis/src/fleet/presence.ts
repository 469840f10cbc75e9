import {
  type FleetPresence,
  type FleetShare,
  type PresenceOptions,
  checkClockSkew,
  withDeadline,
} from '@sluice/core/internal';
import type { RedisConnection } from '../connection/connection.js';
import { fleetKey } from '../key-layout.js';
import { presenceScript } from '../scripts.js';
import { bySlot } from '../slots.js';

/** What a store's presence needs: the connection, and what every engine's presence is given. */
export interface RedisPresenceOptions extends PresenceOptions {
  readonly connection: RedisConnection;
}

/** A prefix's fleet as a holder of it sees it: this node's share of its limits, and how to let it go. */
export interface TrackedFleet {
  /** 1 / the live nodes last counted (1 / assumedNodes until Redis answered). */
  readonly share: FleetShare;
  /** Stops holding the prefix; the node leaves its fleet once every holder released it. */
  release(): void;
}

/** How many answered heartbeats a fleet's count is the most of: as long as a dead node counts (3 heartbeats). */
const COUNTS_KEPT = 3;

/**
 * One limiter prefix's fleet as this node knows it: the most nodes any of its last COUNTS_KEPT answered
 * heartbeats counted. A fleet shrinks as slowly as its dead are dropped, and a Redis that came back empty (a
 * restart, a failover that lost the set) does not read as a small fleet while its nodes' heartbeats return one
 * by one: a fail mode that starts again then would hold the share of a fleet of 5 on each of 64 nodes.
 */
class PrefixFleet implements FleetShare {
  /** Live nodes counted; undefined until a heartbeat was answered. */
  nodes: number | undefined;
  holders = 0;
  readonly #counts: number[] = [];

  constructor(private readonly assumedNodes: number) {}

  get fraction(): number {
    return 1 / Math.max(1, this.nodes ?? this.assumedNodes);
  }

  /** A heartbeat's count; returns true when the count this node goes by changed. */
  counted(count: number): boolean {
    this.#counts.push(count);
    if (this.#counts.length > COUNTS_KEPT) this.#counts.shift();
    const nodes = Math.max(...this.#counts);
    if (nodes === this.nodes) return false;
    this.nodes = nodes;
    return true;
  }
}

/**
 * What a store knows of its fleet: how many nodes share each of its limiters' limits. Every `heartbeatMs` the
 * store tells Redis it is alive under each limiter prefix it holds (presence.lua, one call per Cluster slot for
 * all of them) and reads back how many nodes are: O(log N) per prefix for Redis whatever the fleet's size, and
 * never the membership itself. A node unseen for 3 heartbeats no longer counts. While Redis is away the
 * last count stands, which is when it matters: a fail mode holds `1 / nodes` of each limit (see FleetShare),
 * so a fleet stays near its limit through an outage instead of admitting the limit on every node.
 * @example
 * const presence = new RedisPresence({ connection, identity, heartbeatMs: 1000, assumedNodes: 10, decisionClock: undefined })
 * const { share, release } = presence.track('api') // share.fraction: this node's part of api's limits
 */
export class RedisPresence implements FleetPresence {
  readonly #o: RedisPresenceOptions;
  readonly #fleets = new Map<string, PrefixFleet>();
  #timer: ReturnType<typeof setInterval> | undefined;
  /** A heartbeat asked for at the end of this turn (prefixes tracked together leave in one call). */
  #soon: ReturnType<typeof setImmediate> | undefined;
  #beating = false;
  #closed = false;

  constructor(options: RedisPresenceOptions) {
    this.#o = options;
  }

  /** Live nodes of `prefix`'s fleet at the latest answered heartbeat, or undefined. */
  nodes(prefix: string): number | undefined {
    return this.#fleets.get(prefix)?.nodes;
  }

  /**
   * Starts counting `prefix`'s fleet (this node in it) and returns this node's share of its limits;
   * `release` leaves the fleet once every holder of the prefix released it.
   */
  track(prefix: string): TrackedFleet {
    let fleet = this.#fleets.get(prefix);
    if (fleet === undefined) {
      fleet = new PrefixFleet(this.#o.assumedNodes);
      this.#fleets.set(prefix, fleet);
      this.#beatSoon();
    }
    fleet.holders++;
    this.#timer ??= this.#start();
    const held = fleet;
    let released = false;
    return {
      share: held,
      release: () => {
        if (released) return;
        released = true;
        if (--held.holders > 0 || this.#fleets.get(prefix) !== held) return;
        this.#fleets.delete(prefix);
        this.#o.identity.forget(fleetKey(prefix));
        void this.#call([prefix], true, this.#o.heartbeatMs).catch(() => undefined);
        if (this.#fleets.size === 0) this.#stop();
      },
    };
  }

  #start(): ReturnType<typeof setInterval> {
    const timer = setInterval(() => void this.beat(), this.#o.heartbeatMs);
    // A heartbeat loop must not keep a process alive on its own.
    timer.unref?.();
    return timer;
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#soon !== undefined) clearImmediate(this.#soon);
    this.#soon = undefined;
  }

  #beatSoon(): void {
    if (this.#soon !== undefined || this.#closed) return;
    this.#soon = setImmediate(() => {
      this.#soon = undefined;
      void this.beat();
    });
  }

  /**
   * One heartbeat for every prefix held (resolves when it was answered or failed); an overlapping one is
   * skipped (a slow Redis must not pile them up). A failure leaves the last counts standing.
   */
  async beat(): Promise<void> {
    if (this.#beating || this.#closed || this.#fleets.size === 0) return;
    this.#beating = true;
    let renamed = false;
    try {
      await Promise.all(
        bySlot(this.#o.connection, this.#fleets.keys(), fleetKey).map(async (prefixes) => {
          const id = this.#o.identity.id;
          try {
            const { seenAt, fleets } = await this.#call(prefixes, false, this.#o.heartbeatMs);
            prefixes.forEach((prefix, i) => {
              const { count, reused } = fleets[i] ?? { count: 0, reused: false };
              if (this.#o.identity.heard(fleetKey(prefix), id, seenAt, reused)) renamed = true;
              const fleet = this.#fleets.get(prefix);
              if (reused || fleet === undefined || !(count >= 1) || !fleet.counted(count)) return;
              this.#o.onCount?.(prefix, fleet.nodes as number);
            });
          } catch {
            // Redis is away or slow: the last counts stand (the store's health machine reports the outage).
            for (const prefix of prefixes) this.#o.identity.forget(fleetKey(prefix));
          }
        }),
      );
    } finally {
      this.#beating = false;
    }
    // Under its new id the node is counted at once, not a heartbeat later.
    if (renamed) this.#beatSoon();
  }

  async #call(
    prefixes: readonly string[],
    leaving: boolean,
    deadlineMs: number,
  ): Promise<{ seenAt: string; fleets: { count: number; reused: boolean }[] }> {
    const { connection, identity, heartbeatMs, decisionClock, skewClock } = this.#o;
    const keys = prefixes.map(fleetKey);
    const sentAt = skewClock?.now() ?? 0;
    const reply = await withDeadline(
      connection.runScript(presenceScript(), keys, [
        identity.id,
        String(3 * heartbeatMs),
        decisionClock === undefined ? '' : String(decisionClock.now()),
        leaving ? '1' : '0',
        ...keys.map((key) => identity.lastSeen(key)),
      ]),
      deadlineMs,
      leaving ? 'leaving a fleet' : 'a heartbeat',
    );
    const values = Array.isArray(reply) ? reply : [];
    if (skewClock !== undefined && !leaving)
      checkClockSkew(
        sentAt,
        skewClock.now(),
        Number(values[1]),
        `limiter ${JSON.stringify(prefixes[0])}`,
        "its Redis's (TIME)",
      );
    return {
      seenAt: String(values[0] ?? ''),
      fleets: keys.map((_, i) => ({ count: Number(values[2 * i + 2]), reused: Number(values[2 * i + 3]) === 1 })),
    };
  }

  /** Stops heartbeating and leaves every fleet (one last call per slot, within `deadlineMs`). */
  async close(deadlineMs: number): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    const prefixes = [...this.#fleets.keys()];
    this.#fleets.clear();
    await Promise.all(
      bySlot(this.#o.connection, prefixes, fleetKey).map((group) =>
        this.#call(group, true, deadlineMs).catch(() => undefined),
      ),
    );
  }
}
