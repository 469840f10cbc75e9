import type { Algorithm } from '@sluice/core';

/**
 * A number as the scripts read it: the shortest text that round-trips the double, 'inf' for Infinity.
 * @example
 * numArg(0.1 + 0.2) // every digit, so Lua reads back the same double
 */
export function numArg(x: number): string {
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  return String(x);
}

/**
 * The ARGV entry describing a limiter's rules: one text of newline-separated fields, R, then per rule its
 * kind, how many parameters follow, the parameters in the order its Lua function reads them (the
 * algorithm's own wireParams), and its blockMs (parse_rules in prelude.lua reads it). One string rather
 * than an argument per field (8 for one token bucket): the client encodes and Redis hands Lua one argument,
 * and the scripts find the parsed rules by the string itself.
 * @example
 * const args = [...ruleArgs(limiter.rules), ...requestArgs]
 */
export function ruleArgs(rules: readonly Algorithm[]): [string] {
  if (rules.length === 1) {
    // One rule (a lease, a reserve's draw, a carry link): its text is made once per rule object, as a rule's
    // parameters never change (rules are immutable), not at every call.
    const rule = rules[0] as Algorithm;
    let text = ONE_RULE.get(rule);
    if (text === undefined) ONE_RULE.set(rule, (text = ruleText(rules)));
    return [text];
  }
  return [ruleText(rules)];
}

/** Each single rule's text (see ruleArgs). */
const ONE_RULE = new WeakMap<Algorithm, string>();

function ruleText(rules: readonly Algorithm[]): string {
  const fields = [String(rules.length)];
  for (const rule of rules) {
    fields.push(rule.kind, String(rule.wireParams.length));
    for (const value of rule.wireParams) fields.push(typeof value === 'number' ? numArg(value) : value);
    fields.push(numArg(rule.blockMs));
  }
  return fields.join('\n');
}

/** When a refunded grant was made: at a time on the script's clock (a decide or lease reply), or so long ago. */
export type GrantTime = { readonly atMs: number } | { readonly agoMs: number };

/** A time argument: '' (the server's TIME, or unknown) for undefined or NaN. */
const timeArg = (ms: number | undefined): string => (ms === undefined || Number.isNaN(ms) ? '' : numArg(ms));

/**
 * The ARGV of adjust.lua after the rules (`ruleArgs`): the operation ('reset' takes no permits: 0), its permits
 * (one count of every rule, or each rule's own in rule order: see wirePermits), when a refunded grant was
 * made (see GrantTime; undefined: unknown), and now (undefined or NaN: the server's TIME).
 * @example
 * const args = adjustArgs(ruleArgs(rules), 'refund', 1, { agoMs: 30 }, undefined)
 * const perRule = adjustArgs(ruleArgs([rpm, tpm]), 'penalize', [0, 300], undefined, undefined)
 */
export function adjustArgs(
  rules: readonly string[],
  op: 'refund' | 'penalize' | 'reset',
  permits: number | readonly number[],
  granted: GrantTime | undefined,
  nowMs: number | undefined,
): string[] {
  const at = granted !== undefined && 'atMs' in granted ? granted.atMs : undefined;
  const ago = granted !== undefined && 'agoMs' in granted ? granted.agoMs : undefined;
  const counts = typeof permits === 'number' ? String(permits) : permits.join(',');
  return [...rules, op, counts, timeArg(at), timeArg(ago), timeArg(nowMs)];
}
