import { SluiceRangeError } from '../foundation/errors.js';
import { knownOptions, type OptionNames } from '../foundation/options.js';
import { optionsObject, positiveInteger, representablePeriod } from '../foundation/validate.js';
import { shareOf } from './algorithm.js';
import type { Adjusted, Algorithm, AlgorithmKind, Outcome, RuleOptions } from './algorithm.js';
import { type CommonRule, RULE_OPTIONS, commonRuleOptions, ownOptions } from './rule-common.js';
import { defaultRuleName, periodPart } from './rule-name.js';

/** The options of the windowed algorithms (fixedWindow, slidingWindowLog, slidingWindowCounter). */
export interface WindowOptions extends RuleOptions {
  /** Permits per window (an integer >= 1). */
  limit: number;
  /** Window length in whole milliseconds. */
  windowMs: number;
}

const WINDOW_OPTIONS: OptionNames<WindowOptions> = { ...RULE_OPTIONS, limit: true, windowMs: true };

/** A windowed algorithm's options, validated (errors name the algorithm's option and the bad value). */
export interface ParsedWindowOptions extends CommonRule {
  readonly limit: number;
  readonly windowMs: number;
}

export function windowOptions(kind: AlgorithmKind, options: WindowOptions, short: string): ParsedWindowOptions {
  optionsObject(`${kind} options`, options, true);
  for (const option of ['calendar', 'period', 'timeZone', 'anchor']) {
    if (Object.hasOwn(options, option)) {
      // One way to say a calendar period: a window of windowMs is aligned to the epoch, never to a calendar.
      throw new SluiceRangeError(
        option,
        (options as unknown as Record<string, unknown>)[option],
        `${kind} counts windows of windowMs aligned to the epoch; for days, weeks, months or years in a time ` +
          `zone use calendarWindow({ limit, period, timeZone })`,
      );
    }
  }
  knownOptions(`${kind} options`, WINDOW_OPTIONS, options, true);
  const limit = positiveInteger('limit', options.limit);
  const windowMs = positiveInteger('windowMs', options.windowMs);
  representablePeriod('windowMs', windowMs, windowMs, 'a window of');
  const period = periodPart(windowMs);
  return {
    limit,
    windowMs,
    ...commonRuleOptions(options, defaultRuleName(short, [limit, 'per', period]), `${short}-${period}`),
  };
}

/** What a windowed rule decides with, beside its options: its three functions and how it leases and rescales. */
export interface WindowTraits<S> {
  readonly consume: (state: S | undefined, nowMs: number, permits: number) => Outcome<S>;
  readonly refund: (state: S | undefined, nowMs: number, permits: number, grantedAtMs: number) => Adjusted<S>;
  readonly penalize: (state: S | undefined, nowMs: number, permits: number) => Adjusted<S>;
  readonly lease: 'fixed' | 'sliding' | undefined;
  /** The same kind of rule with these options (for a share of the limit). */
  readonly make: (options: WindowOptions) => Algorithm<S>;
  readonly rescale: (state: S, ratio: number) => S;
  readonly usedAt: (state: S | undefined, nowMs: number) => number;
}

/** A windowed rule: its limit applies per window, it never reserves, and a grant can be refunded. */
export function windowRule<S>(kind: AlgorithmKind, parsed: ParsedWindowOptions, traits: WindowTraits<S>): Algorithm<S> {
  const { limit, windowMs, name, scope, blockMs, planName } = parsed;
  return {
    kind,
    name,
    scope,
    limit,
    windowMs,
    reserves: false,
    stableDenials: true,
    params: { limit, windowMs },
    wireParams: [limit, windowMs],
    planName,
    stateFormat: `${kind}/${windowMs}`,
    refundable: true,
    blockMs,
    burst: limit,
    ratePerSecond: (limit * 1000) / windowMs,
    lease:
      traits.lease === undefined
        ? undefined
        : {
            kind: traits.lease,
            limit,
            windowMs,
            windowAt: (nowMs) => {
              const start = Math.floor(nowMs / windowMs) * windowMs;
              return { start, end: start + windowMs };
            },
          },
    share: (fraction) => traits.make({ ...ownOptions(parsed), limit: shareOf(limit, fraction), windowMs }),
    rescale: traits.rescale,
    usedAt: traits.usedAt,
    consume: traits.consume,
    refund: traits.refund,
    penalize: traits.penalize,
  };
}
