import type { Algorithm } from '@sluice/core';
import type { LeaseWindow } from '@sluice/core/internal';

/** How a node leases one rule: the rule, and its lease model's window. */
export interface LeaseShape {
  readonly rule: Algorithm;
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
  return { rule, windowAt: model.kind === 'bucket' ? undefined : model.windowAt };
}

/** A lease as a node credits it: the engine's answer, and the window it was counted in. */
export interface LeaseReply {
  readonly granted: number;
  /** Until `want` permits could be leased (0: now). */
  readonly retryMs: number;
  /** When the engine decided (its clock, or the node's when given): a hand-back names it. */
  readonly decidedAtMs: number;
  /** The lease dies this long after the engine decided (Infinity: a bucket's never does). */
  readonly expiresInMs: number;
  readonly liveNodes: number;
  /** The start of the window the lease was counted in (0 for a bucket). */
  readonly windowStart: number;
  /** When that window started, from the decision (<= 0; 0 for a bucket). */
  readonly startedInMs: number;
  /** Whole permits the central state had left after this lease. */
  readonly centralRemaining: number;
  /** The node was (re)counted among the lessees by this call. */
  readonly registered: boolean;
}

/** What a held lease of `shape` is, from what the engine answered. */
export function leaseReply(
  shape: LeaseShape,
  answer: Omit<LeaseReply, 'expiresInMs' | 'liveNodes' | 'windowStart' | 'startedInMs'> & { readonly lessees: number },
): LeaseReply {
  const { decidedAtMs } = answer;
  const window = shape.windowAt?.(decidedAtMs);
  return {
    granted: answer.granted,
    retryMs: answer.retryMs,
    decidedAtMs,
    expiresInMs: window === undefined ? Number.POSITIVE_INFINITY : window.end - decidedAtMs,
    liveNodes: answer.lessees,
    windowStart: window?.start ?? 0,
    startedInMs: window === undefined ? 0 : window.start - decidedAtMs,
    centralRemaining: answer.centralRemaining,
    registered: answer.registered,
  };
}
