import type { Adjusted, Algorithm, Outcome } from './algorithm.js';

/**
 * This node's part of a fleet's limit, as the store knows the fleet: 1 / the live nodes it has seen (a
 * Redis store's fail mode), or the share its membership gave it (divided mode). It may change at any time;
 * a rule held at this share follows it (see sharedRule).
 */
export interface FleetShare {
  /** 0 < fraction <= 1. */
  readonly fraction: number;
  /**
   * True when a key this share meets for the first time must start spent rather than full: the node joined a
   * fleet whose other nodes may have spent the key already (a fresh full state would admit it again).
   */
  readonly freshKeysSpent?: boolean;
}

/** A state kept at a share, with the fraction it was last decided under. */
interface SharedState {
  readonly fraction: number;
  readonly state: unknown;
}

/**
 * `rule` held at `share` of its limit, following the share as it changes: what one node enforces of a
 * fleet's limit (divided mode; the 'local' fail mode of every Redis-backed store). A state decided under one
 * share is carried over to the next by `rule.rescale` (what was used or stored is scaled, never refilled, never
 * dropped). Decisions report the fleet's limit and this node's remaining. The one rule for a local share: every
 * mode that holds one uses this.
 * @example
 * const local = memoryStore().bind({ rules: [sharedRule(rule, fleet.share(prefix))], prefix })
 */
export function sharedRule(rule: Algorithm, share: FleetShare): Algorithm {
  let fraction = Number.NaN;
  let scaled = rule;
  /** The rule at the share now, rebuilt only when the share moved. */
  const current = (): Algorithm => {
    const now = share.fraction;
    if (now !== fraction) {
      fraction = now;
      scaled = now === 1 ? rule : rule.share(now);
    }
    return scaled;
  };
  /** A stored state carried over to the share now; a key met for the first time, fresh or spent (freshKeysSpent). */
  const carried = (stored: unknown, nowMs: number): unknown => {
    const s = stored as SharedState | undefined;
    if (s === undefined)
      return share.freshKeysSpent === true ? scaled.penalize(undefined, nowMs, scaled.burst).state : undefined;
    return s.fraction === fraction ? s.state : rule.rescale(s.state, fraction / s.fraction);
  };
  /** A new inner state as stored: the same object when nothing changed, so a denial writes nothing. */
  const kept = (stored: unknown, inner: unknown): SharedState | undefined => {
    if (inner === undefined) return undefined;
    const s = stored as SharedState | undefined;
    return s !== undefined && s.state === inner && s.fraction === fraction ? s : { fraction, state: inner };
  };
  return {
    ...rule,
    consume(stored, nowMs, permits, maxWaitMs): Outcome<unknown> {
      const at = current();
      const inner = carried(stored, nowMs);
      const o = at.consume(inner, nowMs, permits, maxWaitMs);
      return { ...o, state: kept(stored, o.state) };
    },
    refund(stored, nowMs, permits, grantedAtMs): Adjusted<unknown> {
      const at = current();
      const a = at.refund(carried(stored, nowMs), nowMs, permits, grantedAtMs);
      return { ...a, state: kept(stored, a.state) };
    },
    penalize(stored, nowMs, permits): Adjusted<unknown> {
      const at = current();
      const a = at.penalize(carried(stored, nowMs), nowMs, permits);
      return { ...a, state: kept(stored, a.state) };
    },
    share: (f) => sharedRule(rule.share(f), share),
    usedAt: (stored, nowMs) => current().usedAt(carried(stored, nowMs), nowMs),
    rescale: (stored, ratio) => {
      const s = stored as SharedState;
      return { fraction: s.fraction, state: rule.rescale(s.state, ratio) };
    },
  };
}
