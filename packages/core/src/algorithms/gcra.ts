import { inCall } from '../foundation/errors.js';
import { knownOptions, type OptionNames } from '../foundation/options.js';
import { positiveFinite, positiveInteger, representablePeriod } from '../foundation/validate.js';
import {
  type Adjusted,
  type Algorithm,
  type Outcome,
  type RuleOptions,
  TOLERANCE_MS,
  neverFits,
  outcome,
  shareOf,
  wholePermits,
} from './algorithm.js';
import { RULE_OPTIONS, commonRuleOptions, ownOptions } from './rule-common.js';
import { defaultRuleName, ratePart } from './rule-name.js';

/** Options of gcra: the generic cell rate algorithm, a rate with a burst tolerance. */
export interface GcraOptions extends RuleOptions {
  /** Sustained permits per second (a finite number > 0). */
  permitsPerSecond: number;
  /** Permits that may pass at once after a quiet period (an integer >= 1). */
  burst: number;
}

const GCRA_OPTIONS: OptionNames<GcraOptions> = { ...RULE_OPTIONS, permitsPerSecond: true, burst: true };

/**
 * The theoretical arrival time (TAT: when the permits granted so far would have been spent at exactly
 * `permitsPerSecond`), kept as how far it was ahead of the last decision time. Adding the interval to an epoch-scale TAT
 * would round on every grant (a double near 1.7e12 ms carries ~0.24 us) and the error would pile up while a
 * key stays busy; offsets are small numbers, and `now - at` is an exact difference.
 */
export interface GcraState {
  readonly aheadMs: number;
  readonly at: number;
}

/**
 * The generic cell rate algorithm: one number of state (the theoretical arrival time). Admits what a
 * token bucket of capacity `burst` refilled at `permitsPerSecond` would. A caller that passes `maxWaitMs` reserves its
 * slot and waits it out, first come first served.
 *
 * @example
 * const login = gcra({ permitsPerSecond: 1, burst: 5 })
 */
export function gcra(options: GcraOptions): Algorithm<GcraState> {
  return inCall('gcra', () => {
    knownOptions('gcra options', GCRA_OPTIONS, options, true);
    const rate = positiveFinite('permitsPerSecond', options.permitsPerSecond);
    const burst = positiveInteger('burst', options.burst);
    representablePeriod(
      'permitsPerSecond',
      rate,
      (burst * 1000) / rate,
      'the burst tolerance (burst / permitsPerSecond)',
    );
    const common = commonRuleOptions(options, defaultRuleName('gcra', [ratePart(rate), burst]), 'gcra');
    const { name, scope } = common;
    const intervalMs = 1000 / rate;
    const toleranceMs = burst * intervalMs;

    /** How far the TAT is ahead of now; a clock that steps back sees it further ahead (never a refill twice). */
    const aheadOf = (state: GcraState | undefined, nowMs: number): number =>
      state === undefined ? 0 : Math.max(0, state.aheadMs - (nowMs - state.at));

    function consume(
      state: GcraState | undefined,
      nowMs: number,
      permits: number,
      maxWaitMs: number,
    ): Outcome<GcraState> {
      const ahead = aheadOf(state, nowMs);
      const remainingNow = wholePermits((toleranceMs - ahead) / intervalMs);
      if (permits > burst) return neverFits(state, remainingNow, ahead, ahead);
      const newAhead = ahead + permits * intervalMs;
      const waitMs = newAhead - toleranceMs;
      if (waitMs <= maxWaitMs + TOLERANCE_MS) {
        const remaining = wholePermits((toleranceMs - newAhead) / intervalMs);
        return outcome(
          true,
          { aheadMs: newAhead, at: nowMs },
          remaining,
          0,
          newAhead,
          Math.min(Math.max(waitMs, 0), maxWaitMs),
          newAhead,
        );
      }
      return outcome(false, state, remainingNow, waitMs - maxWaitMs, ahead, 0, ahead);
    }

    // The TAT moves by what the permits are worth, back (never behind now) or on (past the burst tolerance,
    // denying until it comes back within it).
    function adjust(state: GcraState | undefined, nowMs: number, permits: number): Adjusted<GcraState> {
      const aheadMs = Math.max(0, aheadOf(state, nowMs) + permits * intervalMs);
      return { state: { aheadMs, at: nowMs }, ttlMs: aheadMs };
    }

    return {
      kind: 'gcra',
      name,
      scope,
      limit: burst,
      windowMs: Math.max(1, Math.ceil(toleranceMs)),
      reserves: true,
      stableDenials: true,
      params: { permitsPerSecond: rate, burst },
      wireParams: [rate, burst],
      planName: common.planName,
      stateFormat: 'gcra',
      refundable: true,
      blockMs: common.blockMs,
      burst,
      ratePerSecond: rate,
      // GCRA(permitsPerSecond, burst) admits exactly what a token bucket of capacity `burst` refilled at that rate does.
      lease: { kind: 'bucket', capacity: burst, refillPerSecond: rate, initial: burst },
      share: (fraction) =>
        gcra({ ...ownOptions(common), permitsPerSecond: rate * fraction, burst: shareOf(burst, fraction) }),
      // The state is time ahead, which the share's interval already scales.
      rescale: (state) => state,
      usedAt: (state, nowMs) => aheadOf(state, nowMs) / intervalMs,
      consume,
      refund: (state, nowMs, permits) => (state === undefined ? { state, ttlMs: 0 } : adjust(state, nowMs, -permits)),
      penalize: adjust,
    };
  });
}
