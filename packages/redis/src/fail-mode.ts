import { type Algorithm, type Decision, SluiceRangeError } from '@sluice/core';
import { describeValue } from '@sluice/core/store-kit';

/** What a Redis-backed mode does when Redis does not answer within `timeoutMs`, or answers with an error. */
export type FailMode = 'local' | 'open' | 'closed';

const FAIL_MODES: readonly FailMode[] = ['local', 'open', 'closed'];

/**
 * The `failMode` option of every Redis-backed mode: 'local' unless given.
 * @example
 * const failMode = failModeOption(options.failMode) // 'local' unless given
 */
export function failModeOption(value: unknown): FailMode {
  if (value === undefined) return 'local';
  if (!FAIL_MODES.includes(value as FailMode)) {
    throw new SluiceRangeError(
      'failMode',
      value,
      `failMode must be 'local', 'open' or 'closed', got ${describeValue(value)}`,
    );
  }
  return value as FailMode;
}

/**
 * The answer of `'open'` or `'closed'` for a request of `permits` under `rule`, the same on every mode:
 * open allows and reports the rule's limit less the request; closed denies and asks to retry after
 * `timeoutMs`, when Redis may answer again. Neither knows when the rule resets (resetAfterMs 0).
 * @example
 * return failModeDecision(rule, 'closed', permits, timeoutMs) // denied, retry after timeoutMs
 */
export function failModeDecision(
  rule: Algorithm,
  mode: 'open' | 'closed',
  permits: number,
  timeoutMs: number,
): Decision {
  const open = mode === 'open';
  return {
    allowed: open,
    limit: rule.limit,
    remaining: open ? Math.max(0, rule.limit - permits) : 0,
    retryAfterMs: open ? 0 : timeoutMs,
    resetAfterMs: 0,
    waitMs: 0,
    rule: rule.name,
  };
}
