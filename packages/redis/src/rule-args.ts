import type { Algorithm } from '@sluice/core';

/** A number as the scripts read it: the shortest text that round-trips the double, 'inf' for Infinity. */
export function numArg(x: number): string {
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  return String(x);
}

/**
 * The ARGV prefix describing a limiter's rules: R, then per rule its kind, how many parameters follow, and
 * the parameters in the order its Lua function reads them (the algorithm's own wireParams).
 */
export function ruleArgs(rules: readonly Algorithm[]): string[] {
  const args = [String(rules.length)];
  for (const rule of rules) {
    args.push(rule.kind, String(rule.wireParams.length));
    for (const value of rule.wireParams) args.push(typeof value === 'number' ? numArg(value) : value);
  }
  return args;
}

/**
 * The ARGV of refund.lua after the rules: permits given back, the time the grant was decided at (the
 * decide or lease reply), and now (undefined or NaN: the server's TIME).
 */
export function refundArgs(rules: readonly string[], permits: number, grantedAtMs: number, nowMs: number | undefined): string[] {
  return [...rules, String(permits), numArg(grantedAtMs), nowMs === undefined || Number.isNaN(nowMs) ? '' : numArg(nowMs)];
}
