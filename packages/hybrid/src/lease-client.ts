import type { Algorithm, LeaseWindow } from '@sluice/core';
import { type RedisConnection, adjustArgs, adjustScript, ruleArgs, runLease } from '@sluice/redis/internal';

/** How a node leases one rule (see lease.lua): the rule as the scripts read it, and its lease model's window. */
export interface LeaseShape {
  readonly rule: Algorithm;
  readonly args: readonly string[];
  /**
   * The window an instant falls in: a windowed rule's leases die with the window they were taken in (an
   * aligned windowMs, or a calendar period); undefined for a bucket's.
   */
  readonly windowAt: ((nowMs: number) => LeaseWindow) | undefined;
}

/** The lease shape of a rule, from the rule's own lease model (see Algorithm.lease). */
export function leaseShape(rule: Algorithm): LeaseShape {
  const model = rule.lease;
  if (model === undefined) throw new TypeError(`${rule.kind} cannot be leased`);
  return { rule, args: ruleArgs([rule]), windowAt: model.kind === 'bucket' ? undefined : model.windowAt };
}

export interface LeaseReply {
  readonly granted: number;
  /** Until `want` permits could be leased (0: now). */
  readonly retryMs: number;
  /** When Redis decided (its TIME, or the node's clock when given): a hand-back names it. */
  readonly decidedAtMs: number;
  /** The lease dies this long after the server decided (Infinity: a bucket's never does). */
  readonly expiresInMs: number;
  readonly liveNodes: number;
  /** The start of the window the lease was counted in (0 for a bucket). */
  readonly windowStart: number;
  /** When that window started, from the decision (<= 0; 0 for a bucket). */
  readonly startedInMs: number;
  /** Whole permits the central state had left after this lease. */
  readonly centralRemaining: number;
  /** The node asked to register as a lessee (LeaseRequest.register); one that did not may still have (a set found gone). */
  readonly registered: boolean;
}

/** What one lease asks for, and of whom. */
export interface LeaseRequest {
  readonly stateKey: string;
  readonly lesseesKey: string;
  readonly shape: LeaseShape;
  /** Permits to take, at most. */
  readonly want: number;
  readonly nodeId: string;
  /** How long this node counts as a live lessee after this lease. */
  readonly liveMs: number;
  /** The decision time on the node's clock (tests), or undefined for Redis TIME. */
  readonly nowMs: number | undefined;
  /** A lease is at most burst / (hoardingDivisor x live lessees); undefined: no such cap (maxBatch was set). */
  readonly hoardingDivisor: number | undefined;
  /**
   * Register the node as a lessee (and sweep dead ones); false when it registered within the last third of
   * liveMs, so the set is only counted (see mustRegister). Default true.
   */
  readonly register?: boolean;
  /** Live limits: the slot's configuration version key and the version the node leases under (undefined: none). */
  readonly version?: { readonly key: string; readonly version: number } | undefined;
}

/** One atomic lease call: debits up to `want` permits centrally and (unless told not to) registers this node as a lessee. */
export async function requestLease(redis: RedisConnection, request: LeaseRequest): Promise<LeaseReply> {
  const { shape } = request;
  const reply = await runLease(redis, {
    stateKey: request.stateKey,
    lesseesKey: request.lesseesKey,
    kind: shape.rule.kind,
    ruleArgs: shape.args,
    burst: shape.rule.burst,
    want: request.want,
    nodeId: request.nodeId,
    liveMs: request.liveMs,
    nowMs: request.nowMs,
    hoardingDivisor: request.hoardingDivisor,
    register: request.register !== false,
    version: request.version,
  });
  const { decidedAtMs } = reply;
  const window = shape.windowAt?.(decidedAtMs);
  return {
    granted: reply.granted,
    retryMs: reply.retryMs,
    decidedAtMs,
    expiresInMs: window === undefined ? Number.POSITIVE_INFINITY : window.end - decidedAtMs,
    liveNodes: reply.liveNodes,
    windowStart: window?.start ?? 0,
    startedInMs: window === undefined ? 0 : window.start - decidedAtMs,
    centralRemaining: reply.centralRemaining,
    registered: reply.registered,
  };
}

/**
 * Hands unspent permits back with the rule's own refund (adjust.lua): a bucket refills up to its capacity,
 * a window takes them back only while the window the lease was counted in is still the stored one.
 */
export async function returnLease(
  redis: RedisConnection,
  stateKey: string,
  shape: LeaseShape,
  permits: number,
  leasedAtMs: number,
  nowMs: number | undefined,
): Promise<void> {
  await redis.runScript(
    adjustScript([shape.rule.kind]),
    [stateKey],
    adjustArgs(shape.args, 'refund', permits, { atMs: leasedAtMs }, nowMs),
  );
}

/** What a node holds of a central state, as giveBack reads and empties it (see key-lease.ts's HeldLease). */
interface Returnable {
  available: number;
  readonly expiresAt: number;
  readonly leasedAt: number;
}

/**
 * Hands back the whole permits `held` has left (returnLease), unless its window has ended; they leave `held`
 * before the call, so a decision meanwhile cannot spend them too.
 * @example
 * await giveBack(redis, stateKey, shape, lease, clock.now(), undefined) // at close, or an evicted lease
 */
export async function giveBack(
  redis: RedisConnection,
  stateKey: string,
  shape: LeaseShape,
  held: Returnable,
  nowMs: number,
  decisionNowMs: number | undefined,
): Promise<void> {
  const permits = Math.floor(held.available);
  if (permits < 1 || nowMs >= held.expiresAt) return;
  held.available -= permits;
  await returnLease(redis, stateKey, shape, permits, held.leasedAt, decisionNowMs);
}

/** Takes `permits` from the rule's central state past its limit (adjust.lua): a penalty this node's lease could not cover. */
export async function penalizeCentrally(
  redis: RedisConnection,
  stateKey: string,
  shape: LeaseShape,
  permits: number,
  nowMs: number | undefined,
  version?: LeaseRequest['version'],
): Promise<void> {
  await redis.runScript(
    adjustScript([shape.rule.kind]),
    withVersion([stateKey], version),
    withVersion(adjustArgs(shape.args, 'penalize', permits, undefined, nowMs), version, true),
  );
}

/** `list` with the configuration version check adjust.lua reads: the version key last in KEYS, the version last in ARGV. */
function withVersion(list: string[], version: LeaseRequest['version'], args = false): string[] {
  if (version === undefined) return list;
  return [...list, args ? String(version.version) : version.key];
}

/**
 * Forgets the rule's central state of a key (adjust.lua 'reset': a window algorithm's count is a key per
 * window, found from the time) and `extraKeys` of the same slot (the key's lessees).
 */
export async function resetCentrally(
  redis: RedisConnection,
  stateKey: string,
  shape: LeaseShape,
  extraKeys: readonly string[],
  nowMs: number | undefined,
  version?: LeaseRequest['version'],
): Promise<void> {
  await redis.runScript(
    adjustScript([shape.rule.kind]),
    withVersion([stateKey, ...extraKeys], version),
    withVersion(adjustArgs(shape.args, 'reset', 0, undefined, nowMs), version, true),
  );
}
