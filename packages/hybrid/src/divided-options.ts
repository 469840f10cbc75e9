import { SluiceRangeError } from '@sluice/core';
import { type SchemaOf, describeValue, oneOf, option } from '@sluice/core/internal';
import { type HybridBackedOptions, HYBRID_BACKED_OPTIONS } from './engine-choice.js';
import type { ShareMode } from './shares.js';

/** The part of a divided limit kept in Redis for nodes past their share, unless `reserve` says otherwise. */
export const DEFAULT_RESERVE = 0.3;

/** The most of a divided limit the reserve may hold: past it, leased mode is the better fit. */
const MAX_RESERVE = 0.9;

/** A `reserve` option: a number in 0..MAX_RESERVE. */
function reserveValue(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= MAX_RESERVE)) {
    throw new SluiceRangeError(
      name,
      value,
      `${name} must be a number in 0..${MAX_RESERVE} (the part of the limit kept in Redis), got ${describeValue(value)}`,
    );
  }
  return value;
}

/** dividedStore's options, checked (see parseOptions); documented on DividedStoreOptions. */
export const DIVIDED_STORE_OPTIONS = {
  ...HYBRID_BACKED_OPTIONS,
  share: option<ShareMode>(oneOf(['equal', 'demand']), 'equal'),
  reserve: option(reserveValue, DEFAULT_RESERVE),
} as const satisfies SchemaOf<DividedStoreOptions, 'redis'>;

/**
 * Options of `dividedStore`: those of every Redis-backed store (RedisBackedOptions; the client is used for
 * heartbeats only), and how the limit is split among nodes. No fail mode: a divided store never asks Redis on
 * the decision path; while Redis is away it keeps its last share and holds its part of the reserve locally.
 */
export interface DividedStoreOptions extends HybridBackedOptions {
  /**
   * How a limit is split among the live nodes: `'equal'`, limit / N per node; `'demand'`, max-min fair shares
   * of the nodes' recent demand, so a busy node is not held to an equal split while idle ones leave theirs
   * unused.
   * @default 'equal'
   */
  share?: ShareMode | undefined;
  /**
   * The part of the limit kept in Redis instead of divided: the nodes' shares split the rest, and a node whose
   * share of a key is spent draws from the reserve in batches (one Redis call per batch, awaited within
   * timeoutMs). Per-node shares alone strand what random arrivals leave unused on a quiet node while a busy one
   * is refused; the reserve gives it to whoever needs it. Every permit drawn is debited in Redis first, so the
   * bound is unchanged: the fleet admits at most the limit (plus a share change's lag of up to 2 heartbeats).
   * 0 keeps every decision off Redis. A number in 0..0.9.
   * @default 0.3
   */
  reserve?: number | undefined;
}
