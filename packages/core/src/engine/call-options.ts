import type { Decision } from '../foundation/decision.js';
import { SluiceTypeError } from '../foundation/errors.js';
import type { OptionNames } from '../foundation/options.js';
import { describe } from '../foundation/validate.js';
import type { TopLimitedOptions } from './limited-keys.js';
import type {
  AcquireOptions,
  OverridesOptions,
  PeekOptions,
  PenalizeOptions,
  ReconfigureOptions,
  RefundOptions,
  TryAcquireOptions,
} from './limiter-types.js';

// The names of a limiter's call options, each list typed against its options type (the compiler refuses a
// missing or an extra name), for knownOptions: `limiter.tryAcquire('k', { permit: 5 })` is refused naming
// `permit` instead of charging the default 1 permit.

/** The names of TryAcquireOptions. */
export const TRY_ACQUIRE_OPTIONS: OptionNames<TryAcquireOptions> = {
  plan: true,
  permits: true,
  maxWaitMs: true,
  signal: true,
  address: true,
};

/** The names of AcquireOptions. */
export const ACQUIRE_OPTIONS: OptionNames<AcquireOptions> = { plan: true, permits: true, signal: true, address: true };

/** The names of PeekOptions. */
export const PEEK_OPTIONS: OptionNames<PeekOptions> = { plan: true, address: true };

/** The names of RefundOptions. */
export const REFUND_OPTIONS: OptionNames<RefundOptions> = { plan: true, grantedMsAgo: true, decision: true };

/** The names of PenalizeOptions. */
export const PENALIZE_OPTIONS: OptionNames<PenalizeOptions> = { plan: true };

/** The names of ReconfigureOptions. */
export const RECONFIGURE_OPTIONS: OptionNames<ReconfigureOptions> = { carry: true };

/** The names of OverridesOptions. */
export const OVERRIDES_OPTIONS: OptionNames<OverridesOptions> = { cursor: true, count: true };

/** The names of TopLimitedOptions. */
export const TOP_LIMITED_OPTIONS: OptionNames<TopLimitedOptions> = { minutes: true };

/** A refund's `decision`: undefined, or a Decision (an object with a boolean `allowed`). */
export function decisionOption(value: unknown): Decision | undefined {
  if (value === undefined) return undefined;
  const d = value as Partial<Decision> | null;
  if (typeof d !== 'object' || d === null || typeof d.allowed !== 'boolean') {
    throw new SluiceTypeError(
      'decision',
      value,
      `decision must be the Decision whose grant is refunded, got ${describe(value)}`,
    );
  }
  return value as Decision;
}
