/**
 * A node's recent demand in permits per second: an exponentially weighted average over intervals of
 * `intervalMs`, so a batch or a share follows the traffic within a few intervals. Adding is O(1).
 */
export class DemandMeter {
  readonly #intervalMs: number;
  /** The weight of the interval just ended in the average (1/2 unless given: lower follows traffic slower). */
  readonly #weight: number;
  #intervalStart: number;
  #count = 0;
  #perSecond = 0;
  #primed = false;

  constructor(intervalMs: number, nowMs: number, weight = 0.5) {
    this.#intervalMs = intervalMs;
    this.#intervalStart = nowMs;
    this.#weight = weight;
  }

  add(permits: number, nowMs: number): void {
    this.#roll(nowMs);
    this.#count += permits;
  }

  /** Permits per second, recent intervals weighted most. Before a whole interval has passed, the count so far. */
  perSecond(nowMs: number): number {
    this.#roll(nowMs);
    if (!this.#primed) {
      const elapsed = Math.max(nowMs - this.#intervalStart, 1);
      return (this.#count * 1000) / elapsed;
    }
    return this.#perSecond;
  }

  /**
   * Permits expected over the next `ms`: the recent rate's worth, or before a whole interval has passed,
   * the count so far (no more: a key seen once is not taken for a rate of one per millisecond).
   */
  expected(ms: number, nowMs: number): number {
    this.#roll(nowMs);
    return this.#primed ? (this.#perSecond * ms) / 1000 : this.#count;
  }

  #roll(nowMs: number): void {
    const elapsed = nowMs - this.#intervalStart;
    if (elapsed < this.#intervalMs) return;
    const intervals = Math.floor(elapsed / this.#intervalMs);
    const rate = (this.#count * 1000) / this.#intervalMs;
    const w = this.#weight;
    this.#perSecond = this.#primed ? this.#perSecond * (1 - w) + rate * w : rate;
    // Idle intervals after it decay the average.
    if (intervals > 1) this.#perSecond *= (1 - w) ** (intervals - 1);
    this.#primed = true;
    this.#count = 0;
    this.#intervalStart += intervals * this.#intervalMs;
  }
}
