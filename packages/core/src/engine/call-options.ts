import type { Decision } from '../foundation/decision.js';
import { SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';

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
