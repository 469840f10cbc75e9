import { KeyGenerations } from './key-generations.js';
import { PrefixGuard } from './prefix-guard.js';
import type { Algorithm } from '../algorithms/algorithm.js';
import type { Ban } from './ban.js';
import { type Clock, clockValue, systemClock } from '../foundation/clock.js';
import { SluiceError, SluiceRangeError, inCall } from '../foundation/errors.js';
import type { BoundStore, RuleSet, Store } from './store.js';
import type { LimitedKeysBinding, LimitedKeysStore } from './limited-keys-board.js';
import { MemoryBoards } from './memory-boards.js';
import type { AccessListBinding, AccessListStore } from './access-list-store.js';
import { MemoryAccessLists } from './memory-access-lists.js';
import { PolicyBinding, SingleRuleBinding } from './memory-bindings.js';
import { Bans, type BindingParts, type Cell, StoreTime, dropEnded, dropExpired } from './memory-cells.js';
import { IdentityBinding } from './memory-identity-binding.js';
import { MemoryPauses } from './memory-pauses.js';
import { MemorySemaphores } from './memory-semaphore.js';
import type { PauseBinding, PauseStore } from './pause-store.js';
import type { ConcurrencyStore, SemaphoreBinding, SemaphoreSpec } from './semaphore-store.js';
import { type SchemaOf, option, optional, parseOptions } from '../foundation/options.js';
import { positiveInteger } from '../foundation/validate.js';

/** Options of `memoryStore`. */
export interface MemoryStoreOptions {
  /**
   * The most keys held at once; the least recently used key is dropped beyond it, so a flood of
   * attacker-chosen keys cannot grow memory without bound. A dropped key starts afresh. Bans are held apart,
   * up to as many again: a flood of new keys pushes out usage, not bans.
   * @default 100_000
   */
  maxKeys?: number;
  /**
   * Time for decisions and for expiring states.
   * @default systemClock
   */
  clock?: Clock;
}

/**
 * The most keys a store keeps in this process unless its `maxKeys` says otherwise: a memory store's states,
 * and what a Redis-backed store keeps here per limiter (its fail mode's states, deny cache, leases, shares).
 */
export const DEFAULT_MAX_KEYS = 100_000;

/** memoryStore's options, checked (see parseOptions); documented on MemoryStoreOptions. */
export const MEMORY_STORE_OPTIONS = {
  maxKeys: option(positiveInteger, DEFAULT_MAX_KEYS),
  clock: optional(clockValue),
} as const satisfies SchemaOf<MemoryStoreOptions>;

/**
 * An in-process store: states bounded by `maxKeys` (the least recently used go first, by generation: see
 * KeyGenerations), each state expiring when it stops mattering (a full bucket, a past window). Exact for
 * this process.
 *
 * @example
 * const store = memoryStore({ maxKeys: 50_000 })
 * const perIp = createLimiter({ rules: fixedWindow({ limit: 60, windowMs: 60_000 }), store, prefix: 'ip' })
 */
export class MemoryStore implements Store, ConcurrencyStore, PauseStore, LimitedKeysStore, AccessListStore {
  readonly clock: Clock;
  readonly maxKeys: number;
  readonly #states: KeyGenerations;
  readonly #bans: KeyGenerations;
  readonly #origin: number;
  #exclusive = false;
  #bindings = 0;
  readonly #prefixes = new PrefixGuard();
  readonly #semaphores = new MemorySemaphores();
  /** Made at the first throttle: most stores never pause. */
  #pauses: MemoryPauses | undefined;
  #boards: MemoryBoards | undefined;
  #lists: MemoryAccessLists | undefined;
  #closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    const o = parseOptions('memoryStore options', MEMORY_STORE_OPTIONS, options, false);
    this.maxKeys = o.maxKeys;
    this.clock = o.clock ?? systemClock;
    this.#states = new KeyGenerations(this.maxKeys);
    this.#bans = new KeyGenerations(this.maxKeys);
    this.#origin = this.clock.now();
  }

  /** Keys currently held (expired ones linger until touched, evicted or pruned). */
  get size(): number {
    return this.#states.size;
  }

  /** Keys of concurrency limiters with a slot held or a caller waiting (nothing else is kept for them). */
  get slotKeys(): number {
    return this.#semaphores.size;
  }

  /** Drops every expired state and every ended ban now instead of when it is next touched or evicted. */
  prune(): void {
    const now = this.clock.now();
    dropExpired(this.#states, now - this.#origin);
    dropEnded(this.#bans, now);
  }

  /** Forgets every key, ban and held slot (a test between cases; a reset of the whole process's limits). */
  clear(): void {
    this.#states.clear();
    this.#bans.clear();
  }

  /** Closes the store: nothing to release but its maps (a Store must close). */
  async close(): Promise<void> {
    this.#closed = true;
    this.clear();
  }

  /**
   * The slots of a concurrencyLimiter: counted here, in this process; bounded by what is in flight (a key
   * with no holder and no waiter holds nothing). Limiters with one prefix share their keys' slots.
   */
  bindSemaphore(spec: SemaphoreSpec): SemaphoreBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'memoryStore is closed');
    return this.#semaphores.bind(spec);
  }

  /** The pauses of a throttle (outgoing calls): kept here, in this process, on this store's clock. */
  bindPause(prefix: string): PauseBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'memoryStore is closed');
    this.#pauses ??= new MemoryPauses(this.clock);
    return this.#pauses.bind(prefix);
  }

  /** A limiter's allow and deny lists: kept here, shared by the limiters of one prefix on this store. */
  bindAccessList(prefix: string): AccessListBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'memoryStore is closed');
    this.#lists ??= new MemoryAccessLists(this.clock);
    return this.#lists.bind(prefix);
  }

  /** A limiter's limited-keys board: kept here, shared by the limiters of one prefix on this store. */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    if (this.#closed) throw new SluiceError('CLOSED', 'memoryStore is closed');
    this.#boards ??= new MemoryBoards();
    return this.#boards.bind(prefix);
  }

  /**
   * Binds a limiter's rules under its prefix (see Store.bind); a second limiter with other rules on one
   * prefix is refused.
   * @param exclusive the limiter created this store for itself: keys need no prefix, and no other
   * limiter may bind it.
   */
  bind(ruleSet: RuleSet, exclusive = false): BoundStore {
    if (this.#closed) throw new SluiceError('CLOSED', 'memoryStore is closed');
    // The limiter that owns the store binds it again apart (a new configuration, an override).
    const successor = exclusive && this.#exclusive && ruleSet.apart !== undefined;
    if (!successor && (this.#exclusive || (exclusive && this.#bindings > 0))) {
      throw new SluiceRangeError(
        'store',
        'memoryStore',
        'this memoryStore belongs to the limiter that created it; create one with memoryStore() to share it',
      );
    }
    const { rules } = ruleSet;
    // A binding apart (see RuleSet.apart) keeps its states apart, and claims its prefix apart too: its rules
    // differ from the limiter's other bindings', which stay bound beside it.
    const apart = ruleSet.apart === undefined ? '' : `\u0002${ruleSet.apart}`;
    const release = exclusive ? undefined : this.#prefixes.claim(`${ruleSet.prefix}${apart}`, ruleSet.plans ?? rules);
    this.#exclusive = exclusive;
    this.#bindings++;
    // Plans share states by rule name, as rules counted against other keys do: one cell per (identity, rule).
    const byIdentity = ruleSet.plans !== undefined || rules.some((rule) => rule.scope !== undefined);
    // Bindings of one prefix (a limiter's plans) share its namespace; a prefix holds no control character,
    // so the two kinds of binding never share one.
    const name = byIdentity ? `\u0001${ruleSet.prefix}` : ruleSet.prefix;
    const cells = this.#states.namespace<Cell>(`${name}${apart}`);
    const bans = this.#bans.namespace<Ban>(name);
    const letGo = [cells.hold(), bans.hold()];
    let bound = true;
    const unbind = (): void => {
      if (!bound) return;
      bound = false;
      this.#bindings--;
      for (const release of letGo) release();
      release?.();
    };
    const parts: BindingParts = {
      cells,
      bans: new Bans(bans),
      time: new StoreTime(this.clock, this.#origin),
      unbind,
    };
    if (byIdentity) return new IdentityBinding(parts, rules);
    return rules.length === 1 ? new SingleRuleBinding(parts, rules[0] as Algorithm) : new PolicyBinding(parts, rules);
  }
}

/**
 * Creates an in-process store; see {@link MemoryStoreOptions}.
 * @example
 * const store = memoryStore({ maxKeys: 100_000 })
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 10, windowMs: 1000 }), store })
 */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return inCall('memoryStore', () => {
    return new MemoryStore(options);
  });
}
