import { optionsObject, positiveFinite, positiveInteger } from '../validate.js';
import {
  type Algorithm,
  type Outcome,
  type RuleOptions,
  TOLERANCE_MS,
  neverFits,
  outcome,
  wholePermits,
} from './algorithm.js';
import { ruleKey, ruleName } from './rule-name.js';

export interface GcraOptions extends RuleOptions {
  /** Sustained permits per second (a finite number > 0). */
  rate: number;
  /** Permits that may pass at once after a quiet period (an integer >= 1). */
  burst: number;
}

export interface GcraState {
  /** Theoretical arrival time: when the emitted permits would have been spent at exactly `rate`. */
  readonly tat: number;
}

/**
 * The generic cell rate algorithm: one number of state (the theoretical arrival time). Admits what a
 * token bucket of capacity `burst` refilled at `rate` would. A caller that passes `timeoutMs` reserves its
 * slot and waits it out, first come first served.
 *
 * @example
 * const login = gcra({ rate: 1, burst: 5 })
 */
export function gcra(options: GcraOptions): Algorithm<GcraState> {
  optionsObject('gcra options', options, true);
  const rate = positiveFinite('rate', options.rate);
  const burst = positiveInteger('burst', options.burst);
  const name = ruleName(options.name, 'gcra');
  const key = ruleKey(options.key);
  const intervalMs = 1000 / rate;
  const toleranceMs = burst * intervalMs;

  function consume(state: GcraState | undefined, nowMs: number, permits: number, maxWaitMs: number): Outcome<GcraState> {
    const tat = state === undefined ? nowMs : Math.max(state.tat, nowMs);
    const remainingNow = wholePermits((nowMs + toleranceMs - tat) / intervalMs);
    if (permits > burst) return neverFits(state, remainingNow, tat - nowMs, tat - nowMs);
    const newTat = tat + permits * intervalMs;
    const waitMs = newTat - toleranceMs - nowMs;
    if (waitMs <= maxWaitMs + TOLERANCE_MS) {
      const ttlMs = newTat - nowMs;
      const remaining = wholePermits((nowMs + toleranceMs - newTat) / intervalMs);
      return outcome(true, { tat: newTat }, remaining, 0, ttlMs, Math.min(Math.max(waitMs, 0), maxWaitMs), ttlMs);
    }
    return outcome(false, state, remainingNow, waitMs - maxWaitMs, tat - nowMs, 0, tat - nowMs);
  }

  return {
    kind: 'gcra',
    name,
    key,
    limit: burst,
    windowMs: Math.max(1, Math.ceil(toleranceMs)),
    reserves: true,
    stableDenials: true,
    params: { rate, burst },
    consume,
  };
}
