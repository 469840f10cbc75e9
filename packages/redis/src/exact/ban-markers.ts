import type { Clock } from '@sluice/core';
import calculateSlot from 'cluster-key-slot';
import type { RedisConnection } from '../connection/connection.js';
import { banKey, banMarkerKey } from '../key-layout.js';
import { withDeadline } from '@sluice/core/internal';

/**
 * How long this process trusts what it read of a slot's ban marker: a ban another node (the CLI, the admin
 * router) sets is seen by an allowed key's decisions here within this.
 */
export const BAN_MARKER_TRUST_MS = 1_000;

/** What was read of one marker, and when (this process's clock); the read under way, if any. */
interface Reading {
  readonly present: boolean;
  readonly readAt: number;
  readonly reading?: Promise<boolean>;
}

/**
 * Whether a ban can be in force for a key, as its slot's ban marker says (banMarkerKey: every ban written
 * there, a rule's or an operator's, raises it until its end and a minute more), read at most once per
 * BAN_MARKER_TRUST_MS per slot: an allowed key's decisions ask Redis for the key's ban only while one can be
 * in force, and cost no call while no ban was written (2,000 allowed decisions: a few EXISTS, no FCALL).
 * @example
 * const markers = new BanMarkers(connection, 'api', 100, clock)
 * if (await markers.mayHold('user:1')) { ... } // only then read the key's ban
 */
export class BanMarkers {
  readonly #read = new Map<string, Reading>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    private readonly timeoutMs: number,
    private readonly clock: Clock,
  ) {}

  /**
   * True when a ban may be in force for `key`. A marker read that fails or misses its deadline says false (not
   * kept: the next call reads again): Redis is likely away, and an allowed key is not held up by it twice.
   */
  mayHold(key: string): boolean | Promise<boolean> {
    const marker = this.#markerOf(key);
    const now = this.clock.now();
    const known = this.#read.get(marker);
    if (known?.reading !== undefined) return known.reading;
    if (known !== undefined && now - known.readAt < BAN_MARKER_TRUST_MS) return known.present;
    // A ban this process made while the read was out (raised) replaced the entry: the read, older, keeps out.
    const current = () => this.#read.get(marker)?.reading === reading;
    const reading: Promise<boolean> = withDeadline(this.connection.exists(marker), this.timeoutMs, 'ban marker').then(
      (present) => {
        if (current()) this.#read.set(marker, { present, readAt: now });
        return present;
      },
      () => {
        if (current()) this.#read.delete(marker);
        return false;
      },
    );
    this.#read.set(marker, { present: true, readAt: Number.NEGATIVE_INFINITY, reading });
    return reading;
  }

  /** This process banned `key`: its slot's marker is up (no need to read it to know). */
  raised(key: string): void {
    this.#read.set(this.#markerOf(key), { present: true, readAt: this.clock.now() });
  }

  #markerOf(key: string): string {
    const slot = this.connection.isCluster ? calculateSlot(banKey(this.prefix, key)) : undefined;
    return banMarkerKey(this.prefix, slot);
  }
}
