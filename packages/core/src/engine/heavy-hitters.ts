/**
 * The keys seen most often in a stream, in fixed memory: the Space-Saving sketch (Metwally, Agrawal and El
 * Abbadi, 2005). It keeps `capacity` counters; a key it holds is counted exactly from when it came in, a new
 * key takes the smallest counter's place and inherits its count as its possible overcount (`error`). Any key
 * seen more than total / capacity times is held, and a held key's true count lies in [count - error, count].
 * The counters sit in fixed slots of typed arrays and a binary min-heap of slot numbers orders them, so
 * counting a held key allocates nothing and costs a Map read and O(log capacity) swaps of integers; only a
 * key taking a place is written into the index.
 */

/** One held key: its count, and how much of that count may belong to the keys it replaced. */
export interface HeavyHitter {
  readonly key: string;
  readonly count: number;
  readonly error: number;
}

/**
 * A Space-Saving sketch of at most `capacity` keys.
 * @example
 * const denied = new HeavyHitters(64)
 * denied.offer('user:1')
 * denied.top(10) // [{ key: 'user:1', count: 1, error: 0 }]
 */
export class HeavyHitters {
  /** Each slot's key, count and error: a slot keeps its key until the key is replaced. */
  readonly #keys: string[];
  readonly #counts: Float64Array;
  readonly #errors: Float64Array;
  /** The min-heap, of slots by count; and where each slot sits in it. */
  readonly #heap: Int32Array;
  readonly #at: Int32Array;
  /** Which slot holds each held key. */
  readonly #slot = new Map<string, number>();
  #size = 0;

  constructor(readonly capacity: number) {
    this.#keys = new Array<string>(capacity).fill('');
    this.#counts = new Float64Array(capacity);
    this.#errors = new Float64Array(capacity);
    this.#heap = new Int32Array(capacity);
    this.#at = new Int32Array(capacity);
  }

  /** How many keys are held. */
  get size(): number {
    return this.#size;
  }

  /** Counts `weight` (> 0) more for `key`. */
  offer(key: string, weight = 1): void {
    const held = this.#slot.get(key);
    if (held !== undefined) {
      this.#counts[held] = (this.#counts[held] as number) + weight;
      this.#down(this.#at[held] as number);
      return;
    }
    if (this.#size < this.capacity) {
      const slot = this.#size++;
      this.#keys[slot] = key;
      this.#counts[slot] = weight;
      this.#errors[slot] = 0;
      this.#slot.set(key, slot);
      this.#heap[slot] = slot;
      this.#at[slot] = slot;
      this.#up(slot);
      return;
    }
    // The smallest counter gives its place: the newcomer may have been seen that often before.
    const slot = this.#heap[0] as number;
    const least = this.#counts[slot] as number;
    this.#slot.delete(this.#keys[slot] as string);
    this.#keys[slot] = key;
    this.#errors[slot] = least;
    this.#counts[slot] = least + weight;
    this.#slot.set(key, slot);
    this.#down(0);
  }

  /** Counts each entry of another sketch (a fleet's merge): its count, carrying its error. */
  merge(entries: readonly HeavyHitter[]): void {
    for (const entry of entries) {
      const before = this.#slot.get(entry.key);
      this.offer(entry.key, entry.count);
      const slot = this.#slot.get(entry.key) as number;
      if (before === undefined) this.#errors[slot] = (this.#errors[slot] as number) + entry.error;
    }
  }

  /** The `n` held keys counted most, most first (ties by key, so the order is stable). */
  top(n: number): HeavyHitter[] {
    const out: HeavyHitter[] = [];
    for (let slot = 0; slot < this.#size; slot++) {
      out.push({
        key: this.#keys[slot] as string,
        count: this.#counts[slot] as number,
        error: this.#errors[slot] as number,
      });
    }
    out.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out.slice(0, n);
  }

  /** Forgets every key. */
  clear(): void {
    this.#slot.clear();
    this.#size = 0;
  }

  /** The count of the slot at heap position `i`. */
  #count(i: number): number {
    return this.#counts[this.#heap[i] as number] as number;
  }

  #swap(a: number, b: number): void {
    const heap = this.#heap;
    const sa = heap[a] as number;
    const sb = heap[b] as number;
    heap[a] = sb;
    heap[b] = sa;
    this.#at[sb] = a;
    this.#at[sa] = b;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#count(parent) <= this.#count(i)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    for (;;) {
      const left = 2 * i + 1;
      if (left >= this.#size) return;
      const right = left + 1;
      const smaller = right < this.#size && this.#count(right) < this.#count(left) ? right : left;
      if (this.#count(i) <= this.#count(smaller)) return;
      this.#swap(i, smaller);
      i = smaller;
    }
  }
}
