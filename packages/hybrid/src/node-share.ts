import type { FleetShare } from '@sluice/core/internal';
import type { HeartbeatAnswer } from '@sluice/core/engine';
import { allocatedFraction, awayFraction, localFraction } from './shares.js';

/**
 * A divided node's share of its fleet's limit, as its heartbeats' answers allocate it: the fraction its rule is
 * held at, the fleet's size, and what it may assume of the keys it meets first.
 */
export class NodeShare implements FleetShare {
  #fraction: number;
  #nodes = 0;
  /**
   * Whether a key this node meets for the first time starts spent (FleetShare.freshKeysSpent): decided at its
   * first heartbeat's answer, true unless that heartbeat founded the fleet (others may have spent a key).
   */
  #freshSpent: boolean | undefined;
  /** The allocation (a fraction of the limit) this node last heard as its current one, and the fraction it then held. */
  #seenCurrent: number | undefined;
  #allocated: number | undefined;
  /** What the shares split: the limit less the reserve. */
  readonly divided: number;
  readonly #reserved: boolean;

  constructor(reserve: number, assumedNodes: number) {
    this.divided = 1 - reserve;
    this.#reserved = reserve > 0;
    // Until the fleet's divisions are seen: with a reserve, none of the divided part (the reserve serves this
    // node, exactly); without one, a conservative share, never the whole limit.
    this.#fraction = reserve > 0 ? 0 : 1 / assumedNodes;
  }

  /** This node's fraction of the fleet's limit (the FleetShare its rule is held at). */
  get fraction(): number {
    return this.#fraction;
  }

  /** A key met for the first time starts spent unless this node founded its fleet (see hear). */
  get freshKeysSpent(): boolean {
    return this.#freshSpent === true;
  }

  /** The live nodes this node last heard its fleet had (0: none yet). */
  get nodes(): number {
    return this.#nodes;
  }

  /** The allocation this node holds its share of (undefined: no division has allocated it any yet). */
  get allocated(): number | undefined {
    return this.#allocated;
  }

  /** The fraction this node holds in place of its part of the reserve while Redis is away (see awayFraction). */
  awayFraction(burst: number): number {
    return this.#allocated === undefined ? 0 : awayFraction(this.#allocated, this.#fraction, burst);
  }

  /** This node joined another fleet (its rule's name changed): the allocations it heard were the old fleet's. */
  rejoined(): void {
    this.#seenCurrent = undefined;
  }

  /**
   * A heartbeat's answer: the share this node's reported demand gets in its fleet's division (less the
   * reserve), for a rule of `burst`. True when the fraction or the fleet's size changed.
   */
  hear(summary: HeartbeatAnswer, burst: number): boolean {
    this.#freshSpent ??= !summary.founded;
    let allocated = allocatedFraction(summary, !this.#reserved);
    // This node's history in the fleet broke (Redis lost the fleet's keys, or this node missed a division or
    // was taken for dead): its previous allocation there is not the one it heard, so it holds no more than it
    // did until a whole division cycle has passed (a founder after a restart must not take the whole limit
    // while the others still hold theirs).
    const seen = this.#seenCurrent;
    if (
      allocated !== undefined &&
      seen !== undefined &&
      summary.current !== seen &&
      summary.previous !== seen &&
      this.#allocated !== undefined
    )
      allocated = Math.min(allocated, this.#allocated);
    if (summary.current !== undefined) this.#seenCurrent = summary.current;
    if (allocated !== undefined) this.#allocated = allocated;
    // Without a reserve a share under one permit is held anyway (rounded up to one by the rule): nothing else
    // would serve the node.
    const fraction =
      allocated === undefined
        ? this.#fraction
        : this.#reserved
          ? localFraction(allocated, burst, this.divided)
          : allocated;
    if (fraction === this.#fraction && summary.nodes === this.#nodes) return false;
    this.#nodes = summary.nodes;
    this.#fraction = fraction;
    return true;
  }
}
