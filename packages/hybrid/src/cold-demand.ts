/**
 * Recent demand of the keys that hold no lease: permits asked per interval, in two Maps (this interval's and
 * the one before), so a key asked a few times costs one Map entry for at most two intervals, not a lease
 * record and a demand meter kept in an LRU. Per-user limits have a long tail of such keys, each decided
 * exactly; only a key whose demand would fill a batch moves on to a lease. This interval holds at most
 * `maxKeys` keys: past that the interval starts over, so a flood of new keys cannot grow it without bound.
 */
export class ColdDemand {
  readonly #intervalMs: number;
  readonly #maxKeys: number;
  #intervalStart: number;
  #current = new Map<string, number>();
  #previous = new Map<string, number>();

  constructor(intervalMs: number, maxKeys: number, nowMs: number) {
    this.#intervalMs = intervalMs;
    this.#maxKeys = maxKeys;
    this.#intervalStart = nowMs;
  }

  /**
   * Counts `permits` asked for `key` at `nowMs`, and returns the key's recent demand: the most it asked in
   * one interval, this one (so far) or the one before.
   */
  add(key: string, permits: number, nowMs: number): number {
    this.#roll(nowMs);
    const count = (this.#current.get(key) ?? 0) + permits;
    this.#current.set(key, count);
    return Math.max(count, this.#previous.get(key) ?? 0);
  }

  /** Forgets a key (it leases now, or it was reset). */
  delete(key: string): void {
    this.#current.delete(key);
    this.#previous.delete(key);
  }

  #roll(nowMs: number): void {
    const elapsed = nowMs - this.#intervalStart;
    if (elapsed < this.#intervalMs && this.#current.size < this.#maxKeys) return;
    // An idle interval in between leaves nothing recent to remember; a full one starts the next at once.
    const recent = elapsed < 2 * this.#intervalMs;
    this.#previous = recent ? this.#current : new Map();
    this.#current = new Map();
    this.#intervalStart = recent && elapsed >= this.#intervalMs ? this.#intervalStart + this.#intervalMs : nowMs;
  }
}
