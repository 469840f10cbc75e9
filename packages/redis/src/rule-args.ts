import type { Algorithm, AlgorithmKind } from '@sluice/core';

/** The order in which each algorithm's parameters are passed to its Lua function (p[1], p[2], ...). */
const PARAM_ORDER: Record<AlgorithmKind, readonly string[]> = {
  fixedWindow: ['limit', 'windowMs'],
  slidingWindowLog: ['limit', 'windowMs'],
  slidingWindowCounter: ['limit', 'windowMs'],
  tokenBucket: ['capacity', 'refillPerSecond', 'initial', 'maxDebt'],
  leakyBucket: ['capacity', 'leakPerSecond', 'mode'],
  gcra: ['rate', 'burst'],
  smoothBursty: ['permitsPerSecond', 'maxBurstSeconds', 'initialPermits'],
  smoothWarmingUp: ['permitsPerSecond', 'warmupMs', 'coldFactor'],
};

/** A number as the scripts read it: the shortest text that round-trips the double, 'inf' for Infinity. */
export function numArg(x: number): string {
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  return String(x);
}

/** The ARGV prefix describing a limiter's rules: R, then each rule's kind and parameters. */
export function ruleArgs(rules: readonly Algorithm[]): string[] {
  const args = [String(rules.length)];
  for (const rule of rules) {
    args.push(rule.kind);
    for (const name of PARAM_ORDER[rule.kind]) {
      const value = rule.params[name];
      if (value === undefined) throw new Error(`rule ${rule.name}: parameter ${name} missing`);
      args.push(typeof value === 'number' ? numArg(value) : value);
    }
  }
  return args;
}
