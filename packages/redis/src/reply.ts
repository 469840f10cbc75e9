import type { Algorithm, Decision, RuleStatus } from '@sluice/core';

function parseNum(s: string | undefined): number {
  if (s === 'inf') return Infinity;
  if (s === '-inf') return -Infinity;
  return Number(s);
}

/** The decision time the script used (Redis TIME, or the client's now). */
export function decidedAt(line: string): number {
  return parseNum(line.split(' ', 7)[6]);
}

/**
 * Turns one reply line of decide.lua into a Decision. `peek` adds back the permit the probe took, as the
 * memory store's peek does.
 */
export function parseDecision(line: string, rules: readonly Algorithm[], peek: boolean): Decision {
  const f = line.split(' ');
  const allowed = f[0] === '1';
  const bump = peek && allowed ? 1 : 0;
  const tightest = rules[Number(f[5])] as Algorithm;
  const decision = {
    allowed,
    limit: tightest.limit,
    remaining: parseNum(f[1]) + bump,
    retryAfterMs: parseNum(f[2]),
    resetAfterMs: parseNum(f[3]),
    waitMs: parseNum(f[4]),
    rule: tightest.name,
  };
  if (rules.length === 1) return decision;
  const statuses: RuleStatus[] = rules.map((rule, r) => ({
    name: rule.name,
    limit: rule.limit,
    windowMs: rule.windowMs,
    remaining: parseNum(f[8 + 3 * r]) + bump,
    resetAfterMs: parseNum(f[9 + 3 * r]),
    allowed: f[7 + 3 * r] === '1',
  }));
  return { ...decision, rules: statuses };
}
