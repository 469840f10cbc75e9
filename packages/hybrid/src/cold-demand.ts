/**
 * Recent demand of the keys that hold no lease: permits asked per interval, this interval's and the one
 * before, so that a key decided exactly moves on to a lease once its demand would fill a batch.
 *
 * Per-user limits have a long tail of keys asked once or twice, so the counts live in a fixed count-min
 * sketch (two rows of small saturating counters, hashed with a per-instance seed) rather than in a Map:
 * counting a key allocates nothing and an interval is a memset, not a Map that grows, rehashes and is then
 * thrown away. A sketch never under-counts a key; a collision can only over-count it, which at worst gives
 * a cold key a lease early (a cost, never a wrong decision). To keep that rare, an interval that has
 * counted more requests than a row has counters for starts the next one at once, as a flood of new keys
 * would: the memory stays fixed whatever the keys.
 */
export class ColdDemand {
  readonly #intervalMs: number;
  /** Counters per row, a power of two. */
  readonly #width: number;
  readonly #seed: number;
  #intervalStart: number;
  /** Requests counted in this interval (an upper bound on its distinct keys). */
  #counted = 0;
  /** Two rows of `#width` counters each, allocated at the first count. */
  #current: Uint8Array | undefined;
  #previous: Uint8Array | undefined;

  /**
   * @param intervalMs - how long an interval lasts
   * @param maxKeys - the most keys an interval needs to tell apart: the sketch's width is the power of two
   *   at or above it, at most 2^15 (two rows of 32 KiB per interval)
   * @param nowMs - when the first interval starts
   * @param seed - the hash's seed (tests pin it); by default a random one, so that keys chosen to collide on
   *   one process do not collide on another
   */
  constructor(intervalMs: number, maxKeys: number, nowMs: number, seed = Math.random() * 2 ** 32) {
    this.#intervalMs = intervalMs;
    this.#width = 2 ** Math.min(15, Math.max(4, Math.ceil(Math.log2(Math.max(1, maxKeys)))));
    this.#seed = seed >>> 0;
    this.#intervalStart = nowMs;
  }

  /**
   * Counts `permits` asked for `key` at `nowMs`, and returns the key's recent demand: the most it asked in
   * one interval, this one (so far) or the one before.
   */
  add(key: string, permits: number, nowMs: number): number {
    this.#roll(nowMs);
    this.#counted += 1;
    const current = this.#rows();
    const [a, b] = this.#slots(key);
    const count = Math.min(current[a] as number, current[b] as number) + permits;
    // Counts saturate: a demand past LEASE_PAYS_AT leases at once, so only small counts need telling apart.
    const kept = Math.min(count, 255);
    if ((current[a] as number) < kept) current[a] = kept;
    if ((current[b] as number) < kept) current[b] = kept;
    const previous = this.#previous;
    if (previous === undefined) return count;
    return Math.max(count, Math.min(previous[a] as number, previous[b] as number));
  }

  /**
   * Forgets a key (it leases now, or it was reset). Its counters are cleared, so a key that shares one
   * forgets that part of its demand too: it leases a little later, never wrongly.
   */
  delete(key: string): void {
    const [a, b] = this.#slots(key);
    for (const row of [this.#current, this.#previous]) {
      if (row === undefined) continue;
      row[a] = 0;
      row[b] = 0;
    }
  }

  #rows(): Uint8Array {
    if (this.#current === undefined) this.#current = new Uint8Array(2 * this.#width);
    return this.#current;
  }

  /** The key's counter in each row: FNV-1a from the seed, the second row's index from a remix of the hash. */
  #slots(key: string): [number, number] {
    let h = this.#seed ^ 0x811c9dc5;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    const mask = this.#width - 1;
    const second = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
    SLOTS[0] = h & mask;
    SLOTS[1] = this.#width + ((second ^ (second >>> 12)) & mask);
    return SLOTS;
  }

  #roll(nowMs: number): void {
    const elapsed = nowMs - this.#intervalStart;
    if (elapsed < this.#intervalMs && this.#counted < this.#width) return;
    // An idle interval in between leaves nothing recent to remember; a full one starts the next at once.
    const recent = elapsed < 2 * this.#intervalMs;
    // The two intervals' counters swap places and the older is cleared: nothing is allocated per interval.
    const spare = this.#previous;
    if (recent) {
      this.#previous = this.#current;
      this.#current = spare;
    } else {
      this.#current?.fill(0);
    }
    spare?.fill(0);
    this.#counted = 0;
    this.#intervalStart = recent && elapsed >= this.#intervalMs ? this.#intervalStart + this.#intervalMs : nowMs;
  }
}

/** The two slots #slots returns, reused: the decision path allocates nothing per key. */
const SLOTS: [number, number] = [0, 0];
