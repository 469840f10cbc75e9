import type { Algorithm, Decision, RuleStatus } from '@sluice/core';

/**
 * The binary half of decide.lua's protocol (see its header): requests packed '<I4dddB', replies '<BdddddB'
 * plus '<Bdd' per rule for a policy. Little-endian IEEE doubles are exact both ways.
 */
export const REQUEST_BYTES = 29;
const REPLY_BYTES = 42;
const RULE_BYTES = 17;

export interface WireRequest {
  /** Index (from 1) of the request's group: the state keys of its rules. */
  readonly group: number;
  /** NaN asks the script to use Redis TIME. */
  readonly now: number;
  readonly permits: number;
  readonly maxWaitMs: number;
  readonly peek: boolean;
}

/** Each group's R key indices (from 1, into KEYS), packed '<I4' each. */
export function packGroups(groups: readonly (readonly number[])[]): Buffer {
  const width = groups[0]?.length ?? 0;
  const buf = Buffer.allocUnsafe(groups.length * width * 4);
  let o = 0;
  for (const group of groups) {
    for (const k of group) {
      buf.writeUInt32LE(k, o);
      o += 4;
    }
  }
  return buf;
}

export function packRequests(requests: readonly WireRequest[]): Buffer {
  const buf = Buffer.allocUnsafe(requests.length * REQUEST_BYTES);
  let o = 0;
  for (const r of requests) {
    buf.writeUInt32LE(r.group, o);
    buf.writeDoubleLE(r.now, o + 4);
    buf.writeDoubleLE(r.permits, o + 12);
    buf.writeDoubleLE(r.maxWaitMs, o + 20);
    buf.writeUInt8(r.peek ? 1 : 0, o + 28);
    o += REQUEST_BYTES;
  }
  return buf;
}

/** One decoded reply: the Decision and the time the script decided it at. */
export interface WireDecision {
  readonly decision: Decision;
  readonly decidedAtMs: number;
}

/**
 * Decodes the reply of `count` requests. `peek[q]` adds back the permit a peek's probe took, as the memory
 * store's peek does.
 */
export function unpackReplies(buf: Buffer, count: number, rules: readonly Algorithm[], peek: (q: number) => boolean): WireDecision[] {
  const out: WireDecision[] = [];
  const perRequest = REPLY_BYTES + (rules.length > 1 ? rules.length * RULE_BYTES : 0);
  if (buf.length !== count * perRequest) throw new Error(`decide.lua replied ${buf.length} bytes for ${count} requests`);
  for (let q = 0, o = 0; q < count; q++, o += perRequest) {
    const allowed = buf.readUInt8(o) === 1;
    const bump = allowed && peek(q) ? 1 : 0;
    const tightest = rules[buf.readUInt8(o + 41)] as Algorithm;
    const decision: Decision = {
      allowed,
      limit: tightest.limit,
      remaining: buf.readDoubleLE(o + 1) + bump,
      retryAfterMs: buf.readDoubleLE(o + 9),
      resetAfterMs: buf.readDoubleLE(o + 17),
      waitMs: buf.readDoubleLE(o + 25),
      rule: tightest.name,
    };
    const decidedAtMs = buf.readDoubleLE(o + 33);
    if (rules.length === 1) {
      out.push({ decision, decidedAtMs });
      continue;
    }
    const statuses: RuleStatus[] = rules.map((rule, r) => {
      const ro = o + REPLY_BYTES + r * RULE_BYTES;
      return {
        name: rule.name,
        limit: rule.limit,
        windowMs: rule.windowMs,
        remaining: buf.readDoubleLE(ro + 1) + bump,
        resetAfterMs: buf.readDoubleLE(ro + 9),
        allowed: buf.readUInt8(ro) === 1,
      };
    });
    out.push({ decision: { ...decision, rules: statuses }, decidedAtMs });
  }
  return out;
}
