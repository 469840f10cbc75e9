import { type Algorithm, type Clock, SluiceError } from '@sluice/core';
import type { Engine } from '@sluice/core/engine';
import {
  type EngineHost,
  keyCache,
  type NodeIdentity,
  staleVersionOf,
  withDeadline,
  type KeyCarrier,
} from '@sluice/core/internal';
import type { LRUCache } from 'lru-cache';
import { CentralLeases } from './central-leases.js';
import { DemandMeter } from './demand-meter.js';
import { type HeldLease, creditLease, emptyLease, heldNow, refundToLease, spendFromLease } from './key-lease.js';
import { type LeaseShape, leaseShape } from './lease-client.js';

/** The name a reserve's states live under, from its rule's state name ('~' is in no rule name). */
export const reserveStateName = (state: string): string => `reserve~${state}`;

/** A draw is about this many ms of a key's recent overflow past this node's share. */
const DRAW_TARGET_MS = 100;

/**
 * One draw is at most the reserve's burst / (this x nodes drawing on the key), at least 1: a node takes its
 * part of what is left, not all of it.
 */
const DRAW_HOARDING_DIVISOR = 2;

/** What a divided limiter's reserve needs of its store. */
export interface ReserveContext {
  /** The engine the reserve's states are kept on (its deadlines this reserve's). */
  readonly engine: Engine;
  /** Where a failure about a key is probed (the engine's package knows). */
  readonly host: Pick<EngineHost, 'probeKey'>;
  /** This node's id among the reserve's lessees. */
  readonly identity: NodeIdentity;
  /** The client clock for draws, or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock: lease expiry and demand. */
  readonly clock: Clock;
  readonly timeoutMs: number;
  /** How long a node counts as drawing on a key after its last draw (3 heartbeats). */
  readonly liveMs: number;
  /** After a draw failed, the reserve is not asked again for this long (a heartbeat). */
  readonly pauseMs: number;
  readonly maxKeys: number;
  /** A draw on the reserve at `stateKey` failed (the store reports it once), or one was answered. */
  failed(error: Error, stateKey: string): void;
  answered(): void;
  /** A draw found its slot's configuration at `version`, newer than this node's: nothing was drawn. */
  stale(version: number): void;
}

/** The configuration generation a reserve draws under (live limits). */
export interface ReserveGeneration {
  /** The name its states live under (the rule's state name: its name, or its generation's). */
  readonly state: string;
  /** The configuration version its draws are made under, read per draw (a slot at a newer one refuses them). */
  readonly version: () => number;
  /** Carries a key's reserve from the generations before, on its first draw after a change. */
  readonly carrier: KeyCarrier | undefined;
}

interface KeyDraw extends HeldLease {
  /** This key's recent overflow past the node's share: a draw is about DRAW_TARGET_MS of it. */
  readonly meter: DemandMeter;
}

/**
 * The part of a divided limit kept centrally: a node whose share of a key is spent draws permits from it in
 * batches (lease.lua on the rule scaled to the reserve), so capacity one node's quiet moment would strand is
 * used by a busy one. Every permit is debited in Redis before it is spent, so the reserve adds nothing to the
 * fleet's bound; a node that dies strands at most one draw.
 * @example
 * const reserve = new Reserve(ctx, rule, 0.2, 'api') // 20% of the limit held in Redis
 * const granted = await reserve.draw('user:1', 1)   // past this node's share
 */
export class Reserve {
  readonly #ctx: ReserveContext;
  readonly #rule: Algorithm;
  readonly #generation: ReserveGeneration;
  #fraction: number;
  #shape: LeaseShape;
  /** The reserve's central states on Redis, and their lessees. */
  readonly #central: CentralLeases;
  readonly #draws: LRUCache<string, KeyDraw>;
  /** Until then a draw is refused without asking: the last one failed. */
  #pausedUntil = Number.NEGATIVE_INFINITY;
  #closed = false;

  /**
   * @param rule - the whole rule
   * @param fraction - the part of the limit the reserve holds, in (0, 1], until the fleet's division says
   * @param generation - the configuration it draws under (its state name names the reserve's keys)
   */
  constructor(ctx: ReserveContext, rule: Algorithm, fraction: number, prefix: string, generation: ReserveGeneration) {
    this.#ctx = ctx;
    this.#rule = rule;
    this.#generation = generation;
    this.#fraction = fraction;
    this.#shape = leaseShape(rule.share(Math.max(fraction, 1 / rule.burst)));
    this.#central = new CentralLeases(ctx, {
      prefix,
      liveMs: ctx.liveMs,
      stateName: reserveStateName(generation.state),
      version: () => generation.version(),
      hoardingDivisor: DRAW_HOARDING_DIVISOR,
    });
    // A draw pushed out of the cache still holds debited permits: give them back.
    this.#draws = keyCache<string, KeyDraw>(ctx.maxKeys, (draw, key, reason) => {
      if (reason === 'evict') void this.#giveBack(key, draw).catch(() => {});
    });
  }

  /**
   * The reserve's part of the limit in the fleet's current division: what no node holds (at least the
   * configured reserve; more where shares round down or are too small to hold). Draws take the rule at it.
   */
  set fraction(fraction: number) {
    if (fraction === this.#fraction || !(fraction >= 0 && fraction <= 1)) return;
    this.#fraction = fraction;
    if (this.#holds()) this.#shape = leaseShape(this.#rule.share(fraction));
  }

  /** Whether the reserve holds a whole permit of the burst (membership.lua counts it so; else it holds none). */
  #holds(): boolean {
    return Math.floor(this.#rule.burst * this.#fraction + 1e-9) >= 1;
  }

  /** The reserve's own burst: the most one request can draw. */
  get burst(): number {
    return this.#shape.rule.burst;
  }

  /** The reserve's fraction now (a new generation's reserve starts at it). */
  get fraction(): number {
    return this.#fraction;
  }

  /**
   * Permits for a request this node's share refused: from what it holds of the reserve, else from one draw
   * (awaited within timeoutMs). False when the reserve is spent, failing or the request larger than it.
   */
  draw(key: string, permits: number): boolean | Promise<boolean> {
    const { clock } = this.#ctx;
    const now = clock.now();
    let draw = this.#draws.get(key);
    if (draw === undefined) {
      draw = { ...emptyLease(), meter: new DemandMeter(DRAW_TARGET_MS, now) };
      this.#draws.set(key, draw);
    }
    draw.meter.add(permits, now);
    if (spendFromLease(draw, permits, now)) return true;
    if (this.#closed || !this.#holds() || permits > this.burst || now < this.#pausedUntil) return false;
    if (draw.pending === undefined && now < draw.emptyUntil) return false;
    return this.#drawThenSpend(key, draw, permits);
  }

  async #drawThenSpend(key: string, draw: KeyDraw, permits: number): Promise<boolean> {
    await this.#generation.carrier?.carryFirst(key);
    if (draw.pending === undefined) {
      const batch = Math.ceil(draw.meter.expected(DRAW_TARGET_MS, this.#ctx.clock.now()));
      this.#startDraw(key, draw, Math.min(Math.max(batch, permits), this.burst));
    }
    try {
      await withDeadline(draw.pending as Promise<void>, this.#ctx.timeoutMs, 'a draw on the reserve');
    } catch (error) {
      // A stale draw is no failure: this node reads the configuration and draws under it from then on.
      if (staleVersionOf(error) === undefined) this.#pause(error, key);
      return false;
    }
    return spendFromLease(draw, permits, this.#ctx.clock.now());
  }

  #startDraw(key: string, draw: KeyDraw, want: number): void {
    const { clock } = this.#ctx;
    const sentAt = clock.now();
    const ask = Math.max(want - draw.available, 1);
    draw.pending = this.#central
      .lease(key, this.#shape, draw, ask, sentAt)
      .then(
        (reply) => {
          creditLease(draw, reply, ask, this.#shape, sentAt, clock.now());
          this.#ctx.answered();
          if (this.#closed) return this.#giveBack(key, draw);
          return undefined;
        },
        (error: unknown) => {
          const newer = staleVersionOf(error);
          if (newer === undefined) this.#pause(error, key);
          else this.#ctx.stale(newer);
          throw error;
        },
      )
      .finally(() => {
        draw.pending = undefined;
      });
    // Waiters see the failure through their own await; this keeps an unawaited one from being unhandled.
    draw.pending.catch(() => {});
  }

  /**
   * How long from `now` until the reserve is asked again for `key` (its last draw found it short: a window's
   * end, a bucket's refill), or undefined when no draw said.
   */
  freesIn(key: string, now: number): number | undefined {
    const until = this.#draws.get(key)?.emptyUntil;
    return until === undefined || until === Number.NEGATIVE_INFINITY ? undefined : Math.max(0, until - now);
  }

  /** Redis answers there again (the store's probe said): draws need not wait out the pause a failed one began. */
  resume(): void {
    this.#pausedUntil = Number.NEGATIVE_INFINITY;
  }

  #pause(error: unknown, key: string): void {
    this.#pausedUntil = this.#ctx.clock.now() + this.#ctx.pauseMs;
    this.#ctx.failed(error instanceof Error ? error : new Error(String(error)), this.#central.stateKey(key));
  }

  /** Gives back to this node's draw on the key what it spent there, up to `permits`; returns what it took back. */
  refund(key: string, permits: number, grantedMsAgo: number): number {
    const draw = this.#draws.get(key);
    if (draw === undefined) return 0;
    return refundToLease(draw, permits, grantedMsAgo, this.#shape.windowAt !== undefined, this.#ctx.clock.now());
  }

  /**
   * A penalty on the key: taken from what this node holds of its draw first; what that cannot cover is the
   * caller's (its share's), or, with `central`, taken from the reserve in Redis past its limit (adjust.lua).
   */
  async penalize(key: string, permits: number, central: boolean): Promise<number> {
    const draw = this.#draws.get(key);
    const held = draw === undefined ? 0 : Math.min(heldNow(draw, this.#ctx.clock.now()), permits);
    if (draw !== undefined) draw.available -= held;
    const rest = permits - held;
    if (rest === 0 || !central) return rest;
    await this.#generation.carrier?.carryFirst(key);
    try {
      await withDeadline(
        this.#central.penalize(key, this.#shape, rest, false),
        this.#ctx.timeoutMs,
        'a penalty on the reserve',
      );
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `penalize(${JSON.stringify(key)}) could not take ${rest} permits from the reserve on Redis: ${why}`,
        { cause: error },
      );
    }
    return 0;
  }

  /** Forgets this node's draw on the key (a reset: what it held is dropped, as the key's local state is). */
  forget(key: string): void {
    this.#draws.delete(key);
  }

  #giveBack(key: string, draw: HeldLease): Promise<void> {
    return this.#central.giveBack(key, this.#shape, draw);
  }

  /** Hands every unspent permit back to the reserve (each within timeoutMs), so the fleet can use it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const draws = [...this.#draws.entries()];
    this.#draws.clear();
    await Promise.all(
      draws.map(async ([key, draw]) => {
        if (draw.pending !== undefined)
          await withDeadline(draw.pending, this.#ctx.timeoutMs, 'a draw').catch(() => undefined);
        await withDeadline(this.#giveBack(key, draw), this.#ctx.timeoutMs, 'a hand-back').catch(() => undefined);
      }),
    );
  }
}
