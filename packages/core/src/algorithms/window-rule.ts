import { optionsObject, positiveInteger } from '../validate.js';
import type { Algorithm, AlgorithmKind, Outcome, RuleOptions } from './algorithm.js';
import { ruleName } from './rule-name.js';

/** The options of the windowed algorithms (fixedWindow, slidingWindowLog, slidingWindowCounter). */
export interface WindowOptions extends RuleOptions {
  /** Permits per window (an integer >= 1). */
  limit: number;
  /** Window length in whole milliseconds. */
  windowMs: number;
}

/** Validates a windowed algorithm's options, naming the algorithm and option in any error. */
export function windowOptions(kind: AlgorithmKind, options: WindowOptions, defaultName: string): Required<WindowOptions> {
  optionsObject(`${kind} options`, options, true);
  return {
    limit: positiveInteger('limit', options.limit),
    windowMs: positiveInteger('windowMs', options.windowMs),
    name: ruleName(options.name, defaultName),
  };
}

/** A windowed rule: its limit applies per window, and it never reserves. */
export function windowRule<S>(
  kind: AlgorithmKind,
  { limit, windowMs, name }: Required<WindowOptions>,
  consume: (state: S | undefined, nowMs: number, permits: number) => Outcome<S>,
): Algorithm<S> {
  return { kind, name, limit, windowMs, reserves: false, stableDenials: true, params: { limit, windowMs }, consume };
}
