import type { Algorithm } from '@sluice/core';
import { mostPermits, type Fallback, type FallbackBinding } from '@sluice/core/internal';
import type { Reserve } from './reserve.js';

/**
 * A divided limiter's time away from Redis: said once when it begins and once when it ends. With a reserve,
 * this node's part of it is held here meanwhile (awayFraction), its keys starting spent; what that grants is
 * charged to the reserve when Redis answers again.
 */
export class Outage {
  /** The store's fail-mode limiters (undefined: reserve 0, nothing is held while away). */
  readonly #fallback: Fallback | undefined;
  readonly #prefix: string;
  #binding: FallbackBinding | undefined;
  /** The failure that began this node's time away from Redis (undefined: it reaches Redis). */
  #from: Error | undefined;
  /** The fraction #binding holds (its last positive one: a FleetShare is never 0), and whether it holds any now. */
  #share = 1;
  #holds = false;

  constructor(fallback: Fallback | undefined, prefix: string, rule: Algorithm) {
    this.#fallback = fallback;
    this.#prefix = prefix;
    this.#binding = this.#bind(rule, undefined);
  }

  /** The part of the reserve held while Redis is away, bound to `rule` (undefined: no reserve). */
  #bind(rule: Algorithm, apart: string | undefined): FallbackBinding | undefined {
    if (this.#fallback === undefined) return undefined;
    const outage = this;
    const ruleSet =
      apart === undefined ? { rules: [rule], prefix: this.#prefix } : { rules: [rule], prefix: this.#prefix, apart };
    return this.#fallback.bind(ruleSet, {
      get fraction() {
        return outage.#share;
      },
      // The reserve's state in Redis is unknown here: its part starts spent, refilling at its rate.
      freshKeysSpent: true,
    });
  }

  /** The limiter decides under `rule` from now on, in the generation `apart` (see DividedBinding's switch). */
  rebind(rule: Algorithm, apart: string): void {
    this.#binding?.unbind();
    this.#binding = this.#bind(rule, apart);
  }

  /** Redis went away, this node then holding `share` of the limit in place of the reserve: false if it was away already. */
  begin(error: Error, share: number): boolean {
    if (this.#from !== undefined) return false;
    this.#from = error;
    this.#holds = share > 0;
    if (share > 0) this.#share = share;
    return true;
  }

  /** Redis answers again: false if it was not away. */
  end(): boolean {
    if (this.#from === undefined) return false;
    this.#from = undefined;
    this.#holds = false;
    return true;
  }

  /** Whether the part of the reserve held here grants `permits` of `key` (only while it holds any). */
  grants(key: string, permits: number): boolean {
    if (!this.#holds || this.#binding === undefined) return false;
    return this.#binding.decide(key, permits, 0, false).allowed;
  }

  /** Gives a grant of the part held here back to it: false if there is none (no reserve). */
  refund(key: string, permits: number, grantedMsAgo: number): boolean {
    if (this.#binding === undefined) return false;
    this.#binding.refund(key, permits, grantedMsAgo);
    return true;
  }

  reset(key: string): void {
    this.#binding?.reset(key);
  }

  unbind(): void {
    this.#binding?.unbind();
  }

  /**
   * What this node granted of its part of the reserve while Redis was away, charged to `reserve` in Redis
   * (past its limit: the fleet pays it back), so an outage's grants count against the limit after it too; what
   * Redis cannot take now is kept for the next recovery. Undefined without a reserve.
   */
  async charge(reserve: Reserve): Promise<OutageCharge | undefined> {
    const binding = this.#binding;
    if (binding === undefined) return undefined;
    const charges = binding.takeCharges();
    let permits = 0;
    let kept = 0;
    await Promise.all(
      charges.map(async ([key, owed]) => {
        try {
          // One rule: its count is the charge's.
          await reserve.penalize(key, mostPermits(owed), true);
          permits += mostPermits(owed);
        } catch {
          kept += mostPermits(owed);
          binding.keepCharge(key, owed);
        }
      }),
    );
    return { keys: charges.length, permits, kept };
  }
}

/** What an outage's grants came to when charged to the reserve (the `fallback-charged` event's figures). */
export interface OutageCharge {
  readonly keys: number;
  readonly permits: number;
  readonly kept: number;
}
