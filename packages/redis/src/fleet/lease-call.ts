import type { RedisConnection } from '../connection/connection.js';
import { bufferReply } from '../script-runner.js';
import { leaseScript } from '../scripts.js';
import type { AlgorithmKind } from '@sluice/core';

/** One lease.lua call: a node takes up to `want` permits of one rule's central state (see lease.lua). */
export interface LeaseCall {
  readonly stateKey: string;
  /** The key's lessees (a sorted set beside the state, in its slot). */
  readonly lesseesKey: string;
  readonly kind: AlgorithmKind;
  /** The rule as the scripts read it (ruleArgs of the one rule). */
  readonly ruleArgs: readonly string[];
  readonly burst: number;
  readonly want: number;
  readonly nodeId: string;
  readonly liveMs: number;
  /** The decision time on the caller's clock, or undefined for Redis TIME. */
  readonly nowMs: number | undefined;
  /** A lease is at most burst / (hoardingDivisor x live lessees); undefined: no cap. */
  readonly hoardingDivisor: number | undefined;
  /** Register the node as a lessee (and sweep the dead); false: only count the lessees. */
  readonly register: boolean;
  /** Live limits: the slot's configuration version key and the version leased under (undefined: none). */
  readonly version: { readonly key: string; readonly version: number } | undefined;
}

/** lease.lua's reply ('<ddddd'). */
export interface LeaseCallReply {
  readonly granted: number;
  readonly retryMs: number;
  readonly decidedAtMs: number;
  readonly liveNodes: number;
  readonly centralRemaining: number;
  /** Whether this call registered the node among the lessees (asked to, or it found the lessees gone). */
  readonly registered: boolean;
}

/**
 * Runs lease.lua once (leased mode's leases, divided mode's reserve draws, redisEngine's `lease`). Rejects with
 * the script's SLUICE_STALE error when the slot's configuration is newer (see versionError).
 * @example
 * const reply = await runLease(connection, { stateKey, lesseesKey, kind: rule.kind, ruleArgs: ruleArgs([rule]), ... })
 */
export async function runLease(connection: RedisConnection, call: LeaseCall): Promise<LeaseCallReply> {
  const script = leaseScript(call.kind);
  const keys =
    call.version === undefined ? [call.stateKey, call.lesseesKey] : [call.stateKey, call.lesseesKey, call.version.key];
  const answer = await connection.runScript(script, keys, [
    ...call.ruleArgs,
    String(call.want),
    call.nodeId,
    String(call.liveMs),
    call.nowMs === undefined ? '' : String(call.nowMs),
    String(call.burst),
    // lease.lua reads 0 as "no cap".
    String(call.hoardingDivisor ?? 0),
    call.register ? '1' : '0',
    ...(call.version === undefined ? [] : [String(call.version.version)]),
  ]);
  const reply = bufferReply(answer, script.name);
  return {
    granted: reply.readDoubleLE(0),
    retryMs: reply.readDoubleLE(8),
    decidedAtMs: reply.readDoubleLE(16),
    liveNodes: reply.readDoubleLE(24),
    centralRemaining: reply.readDoubleLE(32),
    registered: reply.readDoubleLE(40) === 1,
  };
}
