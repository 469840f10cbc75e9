/**
 * The memory store's bound on keys: every namespace (a limiter's prefix) keeps its keys in two generations
 * of Maps, and one budget of `maxKeys` spans them all. Keys land in the current generation; a key found in
 * the old one moves to the current. When the current generations together hold half the budget, every
 * namespace's old generation is dropped and its current one becomes old.
 *
 * Why not an exact LRU (lru-cache): a hit there also relinks the entry at the list's tail, and a namespace
 * there is a prefix glued to every key, a new string hashed on every lookup. Here a hit is one Map lookup of
 * the caller's own string. What is given up: eviction is by generation, not key by key. A key is dropped
 * only after at least `floor(maxKeys / 2)` other keys were used since it was last used (exact LRU waits for
 * `maxKeys`), and the namespaces never hold more than `maxKeys` keys together.
 */
export class KeyGenerations {
  readonly maxKeys: number;
  /** Admissions to the current generations after which they age. */
  readonly #half: number;
  readonly #namespaces = new Map<string, Namespace<unknown>>();
  /** Keys in the current generations. */
  #current = 0;
  /** Keys in every generation. */
  #total = 0;

  constructor(maxKeys: number) {
    this.maxKeys = maxKeys;
    this.#half = Math.ceil(maxKeys / 2);
  }

  /** Keys held, in every namespace. */
  get size(): number {
    return this.#total;
  }

  /**
   * The namespace of that name (one per name: bindings of one prefix share their keys). Whoever keeps it
   * must hold() it: a namespace nobody holds is dropped once it empties.
   */
  namespace<V>(name: string): Namespace<V> {
    let space = this.#namespaces.get(name);
    if (space === undefined) {
      space = new Namespace(this);
      this.#namespaces.set(name, space);
    }
    return space as Namespace<V>;
  }

  /** Every namespace, for pruning and clearing. */
  namespaces(): IterableIterator<Namespace<unknown>> {
    return this.#namespaces.values();
  }

  /** Makes room for one more key in a current generation: ages every namespace when the budget says so. */
  admit(): void {
    // Twice at most: after two agings every generation of the namespaces held here is empty.
    for (let aged = 0; aged < 2 && (this.#current >= this.#half || this.#total >= this.maxKeys); aged++) {
      this.#current = 0;
      for (const [name, space] of this.#namespaces) {
        this.#total -= space.age();
        // Nothing left in it: dropped, unless a binding holds it (it asks for it again when it is made).
        if (space.isEmpty && !space.held) this.#namespaces.delete(name);
      }
    }
  }

  /** Bookkeeping from a namespace: `current` keys joined (+) or left (-) a current generation, `total` any. */
  counted(current: number, total: number): void {
    this.#current += current;
    this.#total += total;
  }

  /** Forgets every key in every namespace. */
  clear(): void {
    for (const space of this.#namespaces.values()) space.clearMaps();
    this.#current = 0;
    this.#total = 0;
  }
}

/** One namespace's keys: a current and an old generation (see KeyGenerations). */
export class Namespace<V> {
  #current = new Map<string, V>();
  #old = new Map<string, V>();
  /** Bindings using this namespace: one that is held is never dropped, so their inserts stay counted. */
  #holders = 0;
  readonly #budget: KeyGenerations;

  constructor(budget: KeyGenerations) {
    this.#budget = budget;
  }

  get held(): boolean {
    return this.#holders > 0;
  }

  get isEmpty(): boolean {
    return this.#current.size === 0 && this.#old.size === 0;
  }

  /** A binding uses this namespace; the function returned says it no longer does. */
  hold(): () => void {
    this.#holders++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#holders--;
    };
  }

  /** The key's value, which now counts as recently used. */
  get(key: string): V | undefined {
    const value = this.#current.get(key);
    if (value !== undefined || this.#old.size === 0) return value;
    return this.#promote(key);
  }

  /** The key's value, leaving its age alone. */
  peek(key: string): V | undefined {
    const value = this.#current.get(key);
    return value !== undefined ? value : this.#old.get(key);
  }

  set(key: string, value: V): void {
    if (this.#current.has(key)) {
      this.#current.set(key, value);
      return;
    }
    if (this.#old.delete(key)) this.#budget.counted(0, -1);
    this.#admit(key, value);
  }

  delete(key: string): void {
    if (this.#current.delete(key)) this.#budget.counted(-1, -1);
    else if (this.#old.delete(key)) this.#budget.counted(0, -1);
  }

  /** Every key and value, old generation first. */
  *entries(): IterableIterator<[string, V]> {
    yield* this.#old;
    yield* this.#current;
  }

  #promote(key: string): V | undefined {
    const value = this.#old.get(key);
    if (value === undefined) return undefined;
    this.#old.delete(key);
    this.#budget.counted(0, -1);
    this.#admit(key, value);
    return value;
  }

  /** Adds a key known to be in neither generation. */
  #admit(key: string, value: V): void {
    // Aging replaces this namespace's maps: make room first, then insert into the current one.
    this.#budget.admit();
    this.#current.set(key, value);
    this.#budget.counted(1, 1);
  }

  /** Called by the budget: drops the old generation (returns how many keys it held); the current becomes old. */
  age(): number {
    const dropped = this.#old.size;
    this.#old = this.#current;
    this.#current = new Map();
    return dropped;
  }

  /** Called by the budget's clear(). */
  clearMaps(): void {
    this.#current = new Map();
    this.#old = new Map();
  }
}
