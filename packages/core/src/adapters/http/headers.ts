import type { Algorithm } from '../../algorithms/algorithm.js';
import type { Decision, RuleStatus } from '../../foundation/decision.js';
import { SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { describe } from '../../foundation/validate.js';

/**
 * Which RateLimit header fields to send: `'draft-8'` (`RateLimit-Policy` and `RateLimit`, of
 * draft-ietf-httpapi-ratelimit-headers-08), `'draft-6'` (`RateLimit-Limit`, `-Remaining`, `-Reset` and
 * `RateLimit-Policy`), or `false` for none. `Retry-After` is sent on every denial regardless.
 */
export type HeaderFormat = 'draft-8' | 'draft-6' | false;

/**
 * The most seconds a header states: 2^31, the value RFC 9111 (section 1.2.2) asks a cache to send for a delta
 * that overflows. Rules cannot span more than MAX_PERIOD_MS, so only a hand-made Decision gets here.
 */
const MAX_HEADER_SECONDS = 2 ** 31;

/** Whole seconds, rounded up (a client that waits what it is told is never early), capped, never negative. */
export const seconds = (ms: number): number => Math.min(MAX_HEADER_SECONDS, Math.max(0, Math.ceil(ms / 1000)));

/** Every rule's standing: a policy's decision lists them, a single rule is the decision itself. */
function standings(decision: Decision, rules: readonly Algorithm[]): readonly RuleStatus[] {
  if (decision.rules !== undefined) return decision.rules;
  const rule = rules[0];
  return [
    {
      name: decision.rule,
      limit: decision.limit,
      windowMs: rule?.windowMs ?? 0,
      remaining: decision.remaining,
      resetAfterMs: decision.resetAfterMs,
      allowed: decision.allowed,
    },
  ];
}

/** A structured-field string (RFC 8941): rule names are already restricted to [A-Za-z0-9_.-]. */
const sfString = (name: string): string => `"${name}"`;

/**
 * The header fields for a decision, as [name, value] pairs. Seconds are whole and rounded up, so a client
 * that waits what it is told is never early.
 * @example
 * for (const [name, value] of rateLimitHeaders(decision, limiter.rules, 'draft-8')) res.setHeader(name, value)
 */
export function rateLimitHeaders(
  decision: Decision,
  rules: readonly Algorithm[],
  format: HeaderFormat,
): [string, string][] {
  if (format !== 'draft-8' && format !== 'draft-6' && format !== false) {
    throw new SluiceRangeError(
      'format',
      format,
      `format must be 'draft-8', 'draft-6' or false, got ${describe(format)}`,
    );
  }
  if (typeof decision !== 'object' || decision === null || typeof decision.allowed !== 'boolean') {
    throw new SluiceTypeError(
      'decision',
      decision,
      `decision must be a Decision from a limiter, got ${describe(decision)}`,
    );
  }
  const fields: [string, string][] = [];
  if (!decision.allowed && Number.isFinite(decision.retryAfterMs)) {
    fields.push(['Retry-After', String(Math.max(1, seconds(decision.retryAfterMs)))]);
  }
  if (format === false) return fields;
  const all = standings(decision, rules);
  const window = (r: RuleStatus): number => Math.max(1, seconds(r.windowMs));
  const reset = (r: RuleStatus): number => (Number.isFinite(r.resetAfterMs) ? seconds(r.resetAfterMs) : 0);
  if (format === 'draft-8') {
    fields.push(['RateLimit-Policy', all.map((r) => `${sfString(r.name)};q=${r.limit};w=${window(r)}`).join(', ')]);
    fields.push(['RateLimit', all.map((r) => `${sfString(r.name)};r=${r.remaining};t=${reset(r)}`).join(', ')]);
    return fields;
  }
  // draft-6 has one set of numbers: the tightest rule's, which the decision carries.
  const tightest = all.find((r) => r.name === decision.rule) ?? (all[0] as RuleStatus);
  fields.push([
    'RateLimit-Policy',
    [tightest, ...all.filter((r) => r !== tightest)].map((r) => `${r.limit};w=${window(r)}`).join(', '),
  ]);
  fields.push(['RateLimit-Limit', String(decision.limit)]);
  fields.push(['RateLimit-Remaining', String(decision.remaining)]);
  fields.push(['RateLimit-Reset', String(reset(tightest))]);
  return fields;
}
