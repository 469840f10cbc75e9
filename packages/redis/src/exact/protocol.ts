import type { Algorithm, Decision, Permits } from '@sluice/core';
import {
  EXPLICIT_BAN,
  type RuleVerdict,
  blockedDecision,
  mergePolicy,
  permitsOfRule,
  uniformPermits,
} from '@sluice/core/internal';

/**
 * The binary half of decide.lua's protocol (see its header): requests packed '<I4dddB', replies '<BdddddB'
 * plus '<Bddd' per rule for a policy; a blocked request's reply is turned into core's blockedDecision, as
 * the memory store's is. A request whose rules count different permits carries -row in its
 * permits field and its counts, '<d' per rule, as that row of the permit rows. Little-endian IEEE doubles are
 * exact both ways.
 */
export const REQUEST_BYTES = 29;
const REPLY_BYTES = 42;
const RULE_BYTES = 25;

export interface WireRequest {
  /** Index (from 1) of the request's group: the state keys of its rules. */
  readonly group: number;
  /** NaN asks the script to use Redis TIME. */
  readonly now: number;
  /** One count for every rule, or each rule's own in the order of the call's rules (see wirePermits). */
  readonly permits: number | readonly number[];
  readonly maxWaitMs: number;
  readonly peek: boolean;
}

/**
 * What a request asks of `rules` on the wire: the one count when every rule counts the same (the common
 * case, packed as before), else each rule's own count in rule order.
 * @example
 * wirePermits({ rpm: 1, tpm: 1_200 }, [rpm, tpm]) // [1, 1200]
 * wirePermits(2, [rpm, tpm])                      // 2
 */
export function wirePermits(permits: Permits, rules: readonly Algorithm[]): number | readonly number[] {
  return uniformPermits(permits, rules) ?? rules.map((rule) => permitsOfRule(permits, rule));
}

/** Each group's R + 1 key indices (from 1, into KEYS; its rules' states, then its ban or 0), packed '<I4' each. */
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

/**
 * The requests ('<I4dddB' each) and, when a request counts differently per rule, the permit rows ('<d' per
 * rule and row; its permits field is then -row, from 1): the ARGV decide.lua reads last (see its header).
 */
export function packRequests(requests: readonly WireRequest[]): { requests: Buffer; permitRows: Buffer | undefined } {
  const buf = Buffer.allocUnsafe(requests.length * REQUEST_BYTES);
  const rows: (readonly number[])[] = [];
  let o = 0;
  for (const r of requests) {
    let permits: number;
    if (typeof r.permits === 'number') permits = r.permits;
    else {
      rows.push(r.permits);
      permits = -rows.length;
    }
    buf.writeUInt32LE(r.group, o);
    buf.writeDoubleLE(r.now, o + 4);
    buf.writeDoubleLE(permits, o + 12);
    buf.writeDoubleLE(r.maxWaitMs, o + 20);
    buf.writeUInt8(r.peek ? 1 : 0, o + 28);
    o += REQUEST_BYTES;
  }
  if (rows.length === 0) return { requests: buf, permitRows: undefined };
  const width = (rows[0] as readonly number[]).length;
  const permitRows = Buffer.allocUnsafe(rows.length * width * 8);
  rows.forEach((row, k) => {
    for (const [r, count] of row.entries()) permitRows.writeDoubleLE(count, (k * width + r) * 8);
  });
  return { requests: buf, permitRows };
}

/**
 * decide.lua's ARGV after the windows: `tail` (the skew bound, then the configuration version, each
 * optional) and, when a request carries per-rule permits, the permit rows after both (padded with '').
 */
export function withPermitRows(tail: readonly string[], permitRows: Buffer | undefined): Array<string | Buffer> {
  if (permitRows === undefined) return [...tail];
  return [tail[0] ?? '', tail[1] ?? '', permitRows];
}

/** One decoded reply: the Decision, the time the script decided it at, and each rule's own verdict. */
export interface WireDecision {
  readonly decision: Decision;
  readonly decidedAtMs: number;
  /** In rule order (for a single rule, its verdict as the script gave it). */
  readonly verdicts: readonly RuleVerdict[];
  /** When the key is blocked: the banning rule's index among `rules` (-1: an explicit block) and the rest of the ban. */
  readonly ban: { readonly rule: number; readonly restMs: number } | undefined;
}

/**
 * Decodes the reply of `count` requests to a part with no rules (a key's ban checked in its own Cluster
 * slot, when none of the policy's rules lives there): whether each key is blocked, and when it was read.
 */
export function unpackBanReplies(buf: Buffer, count: number): Array<Pick<WireDecision, 'decidedAtMs' | 'ban'>> {
  if (buf.length !== count * REPLY_BYTES)
    throw new Error(`decide.lua replied ${buf.length} bytes for ${count} ban checks`);
  const out: Array<Pick<WireDecision, 'decidedAtMs' | 'ban'>> = [];
  for (let o = 0; o < buf.length; o += REPLY_BYTES) {
    const blocked = buf.readUInt8(o + 41) === 1;
    out.push({
      decidedAtMs: buf.readDoubleLE(o + 33),
      ban: blocked ? { rule: buf.readDoubleLE(o + 1), restMs: buf.readDoubleLE(o + 25) } : undefined,
    });
  }
  return out;
}

/**
 * Decodes the reply of `count` requests; `request(q)` is what request q asked. A policy's decision is merged
 * from its rules' verdicts by core's mergePolicy, as the memory store's is. A peek took nothing: its permits
 * remain, as the memory store's peek reports them.
 */
export function unpackReplies(
  buf: Buffer,
  count: number,
  rules: readonly Algorithm[],
  request: (q: number) => { readonly permits: Permits; readonly peek: boolean },
): WireDecision[] {
  const out: WireDecision[] = [];
  const perRequest = REPLY_BYTES + (rules.length > 1 ? rules.length * RULE_BYTES : 0);
  if (rules.length === 0)
    throw new Error('unpackReplies needs the rules; a part of no rules is read with unpackBanReplies');
  if (buf.length !== count * perRequest)
    throw new Error(`decide.lua replied ${buf.length} bytes for ${count} requests`);
  for (let q = 0, o = 0; q < count; q++, o += perRequest) {
    const { permits, peek } = request(q);
    const decidedAtMs = buf.readDoubleLE(o + 33);
    // 0: not blocked; 1: blocked (one rule: by the rule); 2: one rule blocked by an explicit block().
    const blockedBy = buf.readUInt8(o + 41);
    // One rule: whoever set the ban, it floors this rule (the ban's own rule says who set it).
    const oneRuleBan = blockedBy === 2 ? EXPLICIT_BAN : 0;
    const ban =
      blockedBy !== 0
        ? { rule: rules.length === 1 ? oneRuleBan : buf.readDoubleLE(o + 1), restMs: buf.readDoubleLE(o + 25) }
        : undefined;
    if (rules.length !== 1) {
      const verdicts: RuleVerdict[] = rules.map((_, r) => {
        const ro = o + REPLY_BYTES + r * RULE_BYTES;
        return {
          allowed: buf.readUInt8(ro) === 1,
          remaining: buf.readDoubleLE(ro + 1),
          retryAfterMs: buf.readDoubleLE(ro + 9),
          resetAfterMs: buf.readDoubleLE(ro + 17),
        };
      });
      const decision =
        ban !== undefined
          ? blockedDecision(rules, verdicts, ban.rule, ban.restMs, permits)
          : mergePolicy(rules, verdicts, permits, peek);
      out.push({ decision, decidedAtMs, verdicts, ban });
      continue;
    }
    const rule = rules[0] as Algorithm;
    const verdict: RuleVerdict = {
      allowed: buf.readUInt8(o) === 1,
      remaining: buf.readDoubleLE(o + 1),
      retryAfterMs: buf.readDoubleLE(o + 9),
      resetAfterMs: buf.readDoubleLE(o + 17),
    };
    if (ban !== undefined) {
      out.push({
        decision: blockedDecision(rules, [verdict], 0, ban.restMs, permits),
        decidedAtMs,
        verdicts: [verdict],
        ban,
      });
      continue;
    }
    const decision: Decision = {
      allowed: verdict.allowed,
      limit: rule.limit,
      // A peek took nothing: its probe's permits remain.
      remaining: verdict.remaining + (verdict.allowed && peek ? permitsOfRule(permits, rule) : 0),
      retryAfterMs: verdict.retryAfterMs,
      resetAfterMs: verdict.resetAfterMs,
      waitMs: buf.readDoubleLE(o + 25),
      rule: rule.name,
    };
    out.push({ decision, decidedAtMs, verdicts: [verdict], ban });
  }
  return out;
}
