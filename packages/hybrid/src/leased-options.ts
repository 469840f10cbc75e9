import { SluiceRangeError } from '@sluice/core';
import {
  type SchemaOf,
  describeValue,
  option,
  optional,
  positiveFinite,
  positiveInteger,
  type FailModeOptions,
  FAIL_MODE_OPTIONS,
} from '@sluice/core/internal';
import { type HybridBackedOptions, HYBRID_BACKED_OPTIONS } from './engine-choice.js';

/** A batch is about this many ms of a node's recent demand for a key, unless `targetMs` says otherwise. */
export const DEFAULT_TARGET_MS = 100;

/** The next batch is asked for below this fraction of one, unless `lowWater` says otherwise. */
export const DEFAULT_LOW_WATER = 0.5;

/** How long a node counts as a live lessee of a key after its last lease, unless `liveMs` says otherwise. */
export const DEFAULT_LIVE_MS = 5_000;

/** A `lowWater` option: a number in 0..1. */
function fractionValue(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw new SluiceRangeError(name, value, `${name} must be a number in 0..1, got ${describeValue(value)}`);
  }
  return value;
}

/** leasedStore's options, checked (see parseOptions); documented on LeasedStoreOptions. */
export const LEASED_STORE_OPTIONS = {
  ...HYBRID_BACKED_OPTIONS,
  ...FAIL_MODE_OPTIONS,
  targetMs: option(positiveFinite, DEFAULT_TARGET_MS),
  maxLease: optional(positiveInteger),
  lowWater: option(fractionValue, DEFAULT_LOW_WATER),
  liveMs: option(positiveFinite, DEFAULT_LIVE_MS),
} as const satisfies SchemaOf<LeasedStoreOptions, 'redis'>;

/**
 * Options of `leasedStore`: those of every Redis-backed store (RedisBackedOptions, FailModeOptions: while Redis
 * is away, past this node's lease, the fail mode decides), and how large a batch each node leases and keeps.
 */
export interface LeasedStoreOptions extends HybridBackedOptions, FailModeOptions {
  /**
   * A batch is about this many ms of this node's recent demand for the key: larger batches mean fewer
   * Redis calls, smaller ones less held by each node.
   * @default 100
   */
  targetMs?: number | undefined;
  /**
   * The most permits one node leases at once.
   * @default the rule's burst / (4 x nodes that leased the key recently), at least 1
   */
  maxLease?: number | undefined;
  /**
   * The next batch is asked for when the lease falls below this fraction of a batch (0 never prefetches).
   * @default 0.5
   */
  lowWater?: number | undefined;
  /** How long a node counts as a live lessee of a key after its last lease. @default 5000 */
  liveMs?: number | undefined;
}
