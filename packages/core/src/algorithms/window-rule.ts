import { optionsObject, positiveInteger, representablePeriod } from '../validate.js';
import { shareOf } from './algorithm.js';
import type { Algorithm, AlgorithmKind, Outcome, RuleKey, RuleOptions } from './algorithm.js';
import { defaultRuleName, periodPart, ruleKey, ruleName } from './rule-name.js';

/** The options of the windowed algorithms (fixedWindow, slidingWindowLog, slidingWindowCounter). */
export interface WindowOptions extends RuleOptions {
  /** Permits per window (an integer >= 1). */
  limit: number;
  /** Window length in whole milliseconds. */
  windowMs: number;
}

/** Validates a windowed algorithm's options, naming the algorithm and option in any error. */
export interface ParsedWindowOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly name: string;
  readonly key: RuleKey | undefined;
}

export function windowOptions(kind: AlgorithmKind, options: WindowOptions, short: string): ParsedWindowOptions {
  optionsObject(`${kind} options`, options, true);
  const limit = positiveInteger('limit', options.limit);
  const windowMs = positiveInteger('windowMs', options.windowMs);
  representablePeriod('windowMs', windowMs, windowMs, 'a window of');
  return {
    limit,
    windowMs,
    name: ruleName(options.name, defaultRuleName(short, [limit, 'per', periodPart(windowMs)])),
    key: ruleKey(options.key),
  };
}

/** What differs between the windowed rules beside their decision: how they lease, share and rescale. */
export interface WindowTraits<S> {
  readonly lease: 'fixed' | 'sliding' | undefined;
  /** The same kind of rule with these options (for a share of the limit). */
  readonly make: (options: WindowOptions) => Algorithm<S>;
  readonly rescale: (state: S, ratio: number) => S;
}

/** A windowed rule: its limit applies per window, it never reserves, and a grant can be refunded. */
export function windowRule<S>(
  kind: AlgorithmKind,
  { limit, windowMs, name, key }: ParsedWindowOptions,
  consume: (state: S | undefined, nowMs: number, permits: number) => Outcome<S>,
  traits: WindowTraits<S>,
): Algorithm<S> {
  return {
    kind,
    name,
    key,
    limit,
    windowMs,
    reserves: false,
    stableDenials: true,
    params: { limit, windowMs },
    wireParams: [limit, windowMs],
    refundable: true,
    burst: limit,
    ratePerSecond: (limit * 1000) / windowMs,
    lease: traits.lease === undefined ? undefined : { kind: traits.lease, limit, windowMs },
    share: (fraction) => traits.make({ name, ...(key === undefined ? {} : { key }), limit: shareOf(limit, fraction), windowMs }),
    rescale: traits.rescale,
    consume,
  };
}
