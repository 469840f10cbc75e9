import type { Clock } from '@sluice/core';
import type { Engine, Heartbeat, HeartbeatAnswer } from '@sluice/core/engine';
import {
  type EngineLink,
  type NodeIdentity,
  checkClockSkew,
  engineClockName,
  warnOnce,
  withDeadline,
} from '@sluice/core/internal';
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
  answered(answer: HeartbeatAnswer): void;
  failed(error: Error): void;
}

/** What a store's membership heartbeat needs. */
export interface MembershipOptions {
  /** The engine each fleet's heartbeat goes to (its heartbeats asked together leave together). */
  readonly engine: Engine;
  /** The client the engine calls: a lost connection fails every fleet at once, a new one beats at once. */
  readonly link: EngineLink;
  /** This node's id (it changes if another live process was given the same one). */
  readonly identity: NodeIdentity;
  readonly heartbeatMs: number;
  /** Decide membership on this clock instead of the engine's (tests). */
  readonly clock: Clock | undefined;
  /** This process's clock, compared with the engine's at each heartbeat (SLUICE_CLOCK_SKEW); undefined: not compared. */
  readonly skewClock?: Clock | undefined;
}

/** A fleet's name in this node's identity: its prefix and rule (the engine's fleet). */
const fleetOf = (member: MemberOf): string => `${member.prefix}\u0000${member.rule}`;

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
 * A divided store's heartbeat: every `heartbeatMs`, each of the store's divided limiters reports this node's
 * demand to its fleet and hears its own allocation in the fleet's last two divisions: O(log N) for the engine
 * and a constant reply whatever the fleet's size. The heartbeats are asked together, so the engine carries them
 * together (redisEngine: one membership.lua call per Cluster slot for all of them). A node is live while seen
 * within 3 heartbeats. A heartbeat never waits on another (a slow engine must not pile them up).
 * @example
 * const membership = new Membership({ engine, link: connection, identity, heartbeatMs: 1000, clock: undefined })
 * const leave = membership.join(member) // member.answered(answer) every heartbeat
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
    this.#unwatch = options.link.watch(
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
      this.#o.identity.forget(fleetOf(member));
      await this.#call(member, true, this.#o.clock?.now()).catch(() => undefined);
    };
  }

  /** One heartbeat for every limiter joined; skipped while the previous one is still out. */
  async beat(): Promise<void> {
    if (this.#inFlight || this.#closed || this.#members.size === 0) return;
    const { link, identity, skewClock } = this.#o;
    if (this.#failing) {
      link.nudgeReconnect();
      // A call now would wait in the client's queue and could outlive the interval, skipping the next beat
      // (after a long outage: a heartbeat every two intervals); the client's 'ready' beats instead.
      if (!link.connected) return;
    }
    this.#inFlight = true;
    const id = identity.id;
    let renamed = false;
    try {
      const members = [...this.#members];
      const sentAt = skewClock?.now() ?? 0;
      // One time for the turn: the engine carries together only the heartbeats of one time.
      const at = this.#o.clock?.now();
      const results = await Promise.allSettled(members.map((member) => this.#call(member, false, at)));
      this.#failing = results.some((r) => r.status === 'rejected');
      let skewChecked = skewClock === undefined;
      results.forEach((result, m) => {
        const member = members[m] as MemberOf;
        if (result.status === 'rejected') {
          identity.forget(fleetOf(member));
          member.failed(result.reason instanceof Error ? result.reason : new Error(String(result.reason)));
          return;
        }
        const answer = result.value;
        if (!skewChecked && skewClock !== undefined) {
          skewChecked = true;
          const where = `limiter ${JSON.stringify(member.prefix)}`;
          checkClockSkew(sentAt, skewClock.now(), answer.engineNowMs, where, engineClockName(this.#o.engine));
        }
        if (identity.heard(fleetOf(member), id, String(answer.at), answer.idTaken)) renamed = true;
        // A taken id's answer is another process's: this node hears its own under its new id, at once.
        if (!answer.idTaken) member.answered(answer);
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

  /** `member`'s heartbeat (or its leaving) at `at` (undefined: the engine's time), within one interval. */
  #call(member: MemberOf, leaving: boolean, at: number | undefined): Promise<HeartbeatAnswer> {
    const { engine, identity, heartbeatMs } = this.#o;
    const lastSeen = identity.lastSeen(fleetOf(member));
    const beat: Heartbeat = {
      prefix: member.prefix,
      fleet: member.rule,
      node: identity.id,
      leaving,
      liveMs: 3 * heartbeatMs,
      intervalMs: heartbeatMs,
      limit: member.limitPerSecond,
      burst: member.burst,
      demand: leaving ? 0 : member.demand(),
      division: member.mode,
      divided: member.divided,
      windowed: member.windowed,
      minLocal: LEAST_HELD,
      lastAt: lastSeen === '' ? undefined : Number(lastSeen),
      knownNodes: member.knownNodes(),
      assumedNodes: member.assumedNodes,
      version: member.version(),
    };
    return withDeadline(engine.heartbeat(beat, at), heartbeatMs, leaving ? 'leaving a membership' : 'a heartbeat');
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#soon !== undefined) clearImmediate(this.#soon);
    this.#soon = undefined;
  }

  /** Stops heartbeating and leaves every membership (one last heartbeat each, sent together), so the others take up the shares. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    this.#unwatch();
    const members = [...this.#members];
    this.#members.clear();
    const at = this.#o.clock?.now();
    await Promise.all(members.map((member) => this.#call(member, true, at).catch(() => undefined)));
  }
}
