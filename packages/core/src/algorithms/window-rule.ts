import { optionsObject, positiveInteger } from '../validate.js';
import type { Algorithm, AlgorithmKind, Outcome, RuleKey, RuleOptions } from './algorithm.js';
import { ruleKey, ruleName } from './rule-name.js';

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

export function windowOptions(kind: AlgorithmKind, options: WindowOptions, defaultName: string): ParsedWindowOptions {
  optionsObject(`${kind} options`, options, true);
  return {
    limit: positiveInteger('limit', options.limit),
    windowMs: positiveInteger('windowMs', options.windowMs),
    name: ruleName(options.name, defaultName),
    key: ruleKey(options.key),
  };
}

/** A windowed rule: its limit applies per window, and it never reserves. */
export function windowRule<S>(
  kind: AlgorithmKind,
  { limit, windowMs, name, key }: ParsedWindowOptions,
  consume: (state: S | undefined, nowMs: number, permits: number) => Outcome<S>,
): Algorithm<S> {
  return { kind, name, key, limit, windowMs, reserves: false, stableDenials: true, params: { limit, windowMs }, consume };
}
