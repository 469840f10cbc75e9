import type { BoundStore, ParsedOptions, EngineHealth } from '@sluice/core/internal';
import type { HybridContext } from './hybrid-context.js';
import type { LEASED_STORE_OPTIONS } from './leased-options.js';
import type { LeasedEvents } from './leased-events.js';

/** leasedStore's options, checked and with their defaults (see LEASED_STORE_OPTIONS). */
export type LeaseSettings = ParsedOptions<typeof LEASED_STORE_OPTIONS>;

/** What every binding of a leased store shares: besides its settings, clocks, identity and events, one health. */
export interface LeaseContext extends HybridContext<LeaseSettings, LeasedEvents> {
  readonly health: EngineHealth;
}

/**
 * The name leased mode keeps a rule's central state under, from the rule's state name (its name, or its
 * configuration generation's: see LiveBinding); '~' never appears in a rule name.
 */
export const leaseStateName = (state: string): string => `lease~${state}`;

/** What a leased binding decides under besides its rule: live limits (see LiveBinding). */
export interface LeaseLive {
  /** The name of the rule's central state (leaseStateName of its state name). */
  readonly centralName: string;
  /** The configuration version it leases under (read per call). */
  readonly version: () => number;
  /** A lease found its slot's configuration newer: the binding that decides under it, or undefined. */
  readonly onStale: (version: number) => Promise<BoundStore | undefined>;
  /** The binding of one key's override: its decisions say so. */
  readonly override: boolean;
}
