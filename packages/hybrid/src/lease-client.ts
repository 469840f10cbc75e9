import type { Algorithm } from '@sluice/core';
import { type RedisConnection, bufferReply } from '@sluice/redis';
import { hybridScript } from './scripts.js';

/** How a rule's central state is leased (see lease.lua). */
export interface LeaseShape {
  readonly kind: 'bucket' | 'fixed' | 'sliding';
  readonly args: readonly [string, string, string];
  /** Leases of windowed rules die with their window. */
  readonly windowed: boolean;
}

/** The lease shape of a rule, from the rule's own lease model (see Algorithm.lease). */
export function leaseShape(rule: Algorithm): LeaseShape {
  const model = rule.lease;
  if (model === undefined) throw new TypeError(`${rule.kind} cannot be leased`);
  if (model.kind === 'bucket') {
    return { kind: 'bucket', windowed: false, args: [String(model.capacity), String(model.refillPerSecond / 1000), String(model.initial)] };
  }
  return { kind: model.kind, windowed: true, args: [String(model.limit), String(model.windowMs), '0'] };
}

export interface LeaseReply {
  readonly granted: number;
  /** Until `want` permits could be leased (0: now). */
  readonly retryMs: number;
  /** The lease dies this long after the server decided (-1: never). */
  readonly expiresInMs: number;
  readonly liveNodes: number;
  readonly windowStart: number;
}

/** One atomic lease call: debits up to `want` permits centrally and registers this node as a lessee. */
export async function requestLease(
  redis: RedisConnection,
  stateKey: string,
  lesseesKey: string,
  shape: LeaseShape,
  want: number,
  nodeId: string,
  liveMs: number,
  nowMs: number | undefined,
  capDivisor: number,
): Promise<LeaseReply> {
  const script = hybridScript('lease');
  const answer = await redis.runScript(script, [stateKey, lesseesKey], [
    shape.kind,
    ...shape.args,
    String(want),
    nodeId,
    String(liveMs),
    nowMs === undefined ? '' : String(nowMs),
    String(capDivisor),
  ]);
  const reply = bufferReply(answer, script.name);
  return {
    granted: reply.readDoubleLE(0),
    retryMs: reply.readDoubleLE(8),
    expiresInMs: reply.readDoubleLE(16),
    liveNodes: reply.readDoubleLE(24),
    windowStart: reply.readDoubleLE(32),
  };
}

/** Hands unspent permits back (see lease_return.lua); resolves to how many were put back. */
export async function returnLease(
  redis: RedisConnection,
  stateKey: string,
  shape: LeaseShape,
  permits: number,
  windowStart: number,
  nowMs: number | undefined,
): Promise<number> {
  const reply = await redis.runScript(hybridScript('lease_return'), [stateKey], [
    shape.kind,
    shape.args[0],
    shape.args[1],
    String(permits),
    String(windowStart),
    nowMs === undefined ? '' : String(nowMs),
  ]);
  return Number(String(reply));
}
