import type { Clock } from '@sluice/core';
import { type RedisConnection, withDeadline } from '@sluice/redis/store-kit';
import { heartbeatScript } from './scripts.js';
import type { NodeDemand } from './shares.js';

export interface MembershipOptions {
  readonly redis: RedisConnection;
  readonly membersKey: string;
  readonly demandKey: string;
  readonly nodeId: string;
  readonly heartbeatMs: number;
  /** Decide membership on this clock instead of Redis TIME (tests). */
  readonly clock: Clock | undefined;
  /** This node's demand to report, in permits per second. */
  readonly demand: () => number;
  readonly onMembers: (members: readonly NodeDemand[]) => void;
  readonly onError: (error: Error) => void;
}

/**
 * Heartbeats into Redis every `heartbeatMs` (node id and recent demand) and hands the live membership to
 * `onMembers`. A node is live while seen within 3 heartbeats. One call per heartbeat, never per request.
 */
export class Membership {
  readonly #o: MembershipOptions;
  readonly #timer: ReturnType<typeof setInterval>;
  #inFlight = false;
  #failing = false;

  constructor(options: MembershipOptions) {
    this.#o = options;
    this.#timer = setInterval(() => void this.beat(), options.heartbeatMs);
    // A heartbeat loop must not keep a process alive on its own.
    this.#timer.unref?.();
    void this.beat();
  }

  /** One heartbeat; overlapping ones are skipped (a slow Redis must not pile them up). */
  async beat(leaving = false): Promise<void> {
    if (this.#inFlight && !leaving) return;
    this.#inFlight = true;
    // A failing membership heartbeats as a probe: a client in its reconnect backoff is asked to connect now.
    if (this.#failing) this.#o.redis.nudgeReconnect();
    try {
      const o = this.#o;
      const call = o.redis.runScript(
        heartbeatScript(),
        [o.membersKey, o.demandKey],
        [
          o.nodeId,
          String(o.demand()),
          String(3 * o.heartbeatMs),
          o.clock === undefined ? '' : String(o.clock.now()),
          leaving ? '1' : '0',
        ],
      );
      const reply = await withDeadline(call, o.heartbeatMs, 'a heartbeat');
      if (leaving) return;
      this.#failing = false;
      const flat = Array.isArray(reply) ? reply : [];
      const members: NodeDemand[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        members.push({ id: String(flat[i]), demand: Number(String(flat[i + 1])) || 0 });
      }
      o.onMembers(members);
    } catch (error) {
      if (leaving) return;
      this.#failing = true;
      this.#o.onError(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.#inFlight = false;
    }
  }

  /** Stops heartbeating and leaves the membership, so the others take up its share at their next heartbeat. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.beat(true);
  }
}
