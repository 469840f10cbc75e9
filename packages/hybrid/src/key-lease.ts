import type { LeaseReply, LeaseShape } from './lease-client.js';

/** What a node holds of one key's central state: permits leased and not yet spent, and when it may ask again. */
export interface HeldLease {
  /** Permits debited centrally and not yet spent here. */
  available: number;
  /** Permits spent here from the lease (in its window, for a windowed rule), less refunds: what a refund may give back. */
  spent: number;
  /** When the lease dies (its window ends), on this node's clock. */
  expiresAt: number;
  windowStart: number;
  /** When its window started, on this node's clock (a refund gives back only grants made since). */
  startedAt: number;
  /** When Redis decided the latest lease: a hand-back names it (a window refunds only the one it was counted in). */
  leasedAt: number;
  /** Until then Redis said it had nothing for us: deny locally instead of asking. */
  emptyUntil: number;
  /** What the central state had left after this node's latest lease. */
  centralRemaining: number;
  /** When this node last registered as the key's lessee (its clock), so a lease call need not every time. */
  registeredAt: number;
  pending: Promise<void> | undefined;
}

/** A lease record holding nothing, free to ask at once. */
export function emptyLease(): HeldLease {
  return {
    available: 0,
    spent: 0,
    expiresAt: Number.POSITIVE_INFINITY,
    windowStart: 0,
    startedAt: Number.NEGATIVE_INFINITY,
    leasedAt: 0,
    emptyUntil: Number.NEGATIVE_INFINITY,
    centralRemaining: 0,
    registeredAt: Number.NEGATIVE_INFINITY,
    pending: undefined,
  };
}

/**
 * Whether a lease call on this record must register the node as a lessee again: a third of `liveMs` since it
 * last did (a lessee counts as live for liveMs after it registered, so it stays counted with two chances to
 * spare); in between, lease.lua only counts the set.
 * @example
 * requestLease(redis, { ...request, register: mustRegister(lease, clock.now(), liveMs) })
 */
export function mustRegister(lease: HeldLease, now: number, liveMs: number): boolean {
  return now - lease.registeredAt >= liveMs / 3;
}

/** Permits the lease holds now: none once its window has ended (what it held then is dropped). */
export function heldNow(lease: HeldLease, now: number): number {
  if (now >= lease.expiresAt) lease.available = 0;
  return lease.available;
}

/**
 * Credits a lease call's reply to the record: a windowed lease taken in a new window replaces what the old
 * one held; the lease dies when its window ends, measured from the send (never later than that on this node's
 * clock). A short lease that emptied the central state sets when to ask again (see nextAskAfterEmpty).
 */
export function creditLease(
  lease: HeldLease,
  reply: LeaseReply,
  asked: number,
  shape: LeaseShape,
  sentAt: number,
  now: number,
): void {
  const windowed = shape.windowAt !== undefined;
  lease.leasedAt = reply.decidedAtMs;
  if (reply.registered) lease.registeredAt = sentAt;
  if (windowed) {
    if (reply.windowStart !== lease.windowStart || now >= lease.expiresAt) {
      lease.available = 0;
      lease.spent = 0;
    }
    lease.windowStart = reply.windowStart;
    lease.expiresAt = sentAt + reply.expiresInMs;
    lease.startedAt = sentAt + reply.startedInMs;
  }
  lease.available += reply.granted;
  lease.centralRemaining = reply.centralRemaining;
  lease.emptyUntil =
    reply.granted < asked && reply.retryMs > 0
      ? now + nextAskAfterEmpty(reply.retryMs, reply.liveNodes, windowed, (1_000 * asked) / shape.rule.ratePerSecond)
      : Number.NEGATIVE_INFINITY;
}

/**
 * How long a node waits to ask again after the central state ran short (`retryMs`: until its batch is back).
 * A window's permits all come back when it ends: ask then. A bucket refills continuously: were every lessee to
 * ask as soon as one batch is back, a fleet of N nodes would call N times per batch refilled (a herd splitting
 * each batch N ways); each waits about N / 2 batches' refill (`batchMs` each) past the first instead, spread at
 * random, so the fleet asks about twice per batch refilled: few calls, and never so late that the bucket fills
 * up unasked (a burst, then a dip). What the bucket owes (a penalty, an outage's charge) is waited out once,
 * not N / 2 times: `retryMs` beyond one batch's refill is the debt's. A lone lessee asks as soon as its batch
 * is back.
 * @example
 * nextAskAfterEmpty(0.5, 1_000, false, 0.5) // 125-375 ms: 1,000 lessees each asking in turn
 * nextAskAfterEmpty(200.5, 1_000, false, 0.5) // 325-575 ms: a debt of 200 ms waited out once, not 1,000 times
 */
export function nextAskAfterEmpty(
  retryMs: number,
  liveNodes: number,
  windowed: boolean,
  batchMs: number,
  random: () => number = Math.random,
): number {
  if (windowed || liveNodes <= 1) return retryMs;
  const batch = Math.min(batchMs, retryMs);
  return retryMs - batch + batch * liveNodes * (0.25 + 0.5 * random());
}

/** Spends `permits` from the lease if it holds them now; false (nothing spent) if not. */
export function spendFromLease(lease: HeldLease, permits: number, now: number): boolean {
  if (heldNow(lease, now) < permits) return false;
  lease.available -= permits;
  lease.spent += permits;
  return true;
}

/**
 * Gives back to the lease what was spent from it, up to `permits` (never more than it took from Redis, so the
 * fleet stays within the central limit); for a windowed rule only while the grant's window lasts. Returns the
 * permits given back.
 */
export function refundToLease(
  lease: HeldLease,
  permits: number,
  grantedMsAgo: number,
  windowed: boolean,
  now: number,
): number {
  if (now >= lease.expiresAt) return 0;
  if (windowed && !Number.isNaN(grantedMsAgo) && now - grantedMsAgo < lease.startedAt) return 0;
  const given = Math.min(permits, lease.spent);
  lease.spent -= given;
  lease.available += given;
  return given;
}
