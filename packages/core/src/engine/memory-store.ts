import { KeyGenerations, type Namespace } from './key-generations.js';
import { PrefixGuard } from './prefix-guard.js';
import type { Adjusted, Algorithm } from '../algorithms/algorithm.js';
import { identityOf, stateName } from '../algorithms/rule-name.js';
import { type Ban, EXPLICIT_BAN, banAfter, blockedDecision, longerBan } from './ban.js';
import { type Clock, systemClock } from '../foundation/clock.js';
import type { Decision } from '../foundation/decision.js';
import { SluiceError, SluiceRangeError, inCall } from '../foundation/errors.js';
import { type RuleVerdict, decidePolicy, ruleDecision } from './policy.js';
import { type BoundStore, type Permits, type RuleSet, type StateAccess, type Store, permitsOfRule } from './store.js';
import type { LimitedKeysBinding, LimitedKeysStore } from './limited-keys-board.js';
import { MemoryBoards } from './memory-boards.js';
import type { AccessListBinding, AccessListStore } from './access-list-store.js';
import { MemoryAccessLists } from './memory-access-lists.js';
import { MemoryPauses } from './memory-pauses.js';
import { MemorySemaphores } from './memory-semaphore.js';
import type { PauseBinding, PauseStore } from './pause-store.js';
import type { ConcurrencyStore, SemaphoreBinding, SemaphoreSpec } from './semaphore-store.js';
import { option, optional, parseOptions } from '../foundation/options.js';
import { clockValue, positiveInteger } from '../foundation/validate.js';

/** Options of `memoryStore`. */
export interface MemoryStoreOptions {
  /**
   * The most keys held at once; the least recently used key is dropped beyond it, so a flood of
   * attacker-chosen keys cannot grow memory without bound. A dropped key starts afresh. Bans are held apart,
   * up to as many again: a flood of new keys pushes out usage, not bans.
   * @default DEFAULT_MAX_KEYS (100_000)
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

/** memoryStore's options, declared once (see parseOptions). */
export const MEMORY_STORE_OPTIONS = {
  maxKeys: option(
    'The most keys held at once (least recently used dropped first).',
    positiveInteger,
    DEFAULT_MAX_KEYS,
    'DEFAULT_MAX_KEYS',
  ),
  clock: optional('Time for decisions and for expiring states; systemClock when not given.', clockValue),
} as const;

/**
 * One key's state and when it stops mattering. A grant updates the cell in place, so a decision costs
 * one cache lookup; expiry is judged against the decision's own clock reading, so it can never disagree
 * with the decision (no second clock, no timers).
 */
interface Cell {
  state: unknown;
  /**
   * When prune() may drop the state: whole milliseconds since the store's origin, rounded up plus one, a
   * small integer that V8 keeps unboxed for the first 12 days of a store's life (a double costs a 16-byte
   * box per key). It never decides a request: a state past its time decides as a fresh one would.
   */
  expiresAt: number;
}

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
    const sinceOrigin = now - this.#origin;
    for (const space of this.#states.namespaces() as IterableIterator<Namespace<Cell>>) {
      const expired: string[] = [];
      for (const [key, cell] of space.entries()) if (cell.expiresAt <= sinceOrigin) expired.push(key);
      for (const key of expired) space.delete(key);
    }
    for (const space of this.#bans.namespaces() as IterableIterator<Namespace<Ban>>) {
      const ended: string[] = [];
      for (const [key, ban] of space.entries()) if (ban.until <= now) ended.push(key);
      for (const key of ended) space.delete(key);
    }
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
    const byIdentity = ruleSet.plans !== undefined || rules.some((rule) => rule.key !== undefined);
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

/** What a binding is given by its store: its namespace's cells and bans, the store's time, its unbinding. */
interface BindingParts {
  readonly cells: Namespace<Cell>;
  readonly bans: Bans;
  readonly time: StoreTime;
  readonly unbind: () => void;
}

/** The store's clock, and the cell expiry arithmetic relative to its origin. */
class StoreTime {
  constructor(
    readonly clock: Clock,
    private readonly origin: number,
  ) {}

  /** Stores `state` for `key`, reusing the key's cell when it has one. */
  store(cells: Namespace<Cell>, key: string, cell: Cell | undefined, state: unknown, now: number, ttlMs: number): void {
    // A millisecond past the rounded-up end: rounding can never make a state look done before it is.
    const expiresAt = Math.ceil(now - this.origin + ttlMs) + 1;
    if (cell === undefined) cells.set(key, { state, expiresAt });
    else {
      cell.state = state;
      cell.expiresAt = expiresAt;
    }
  }

  /**
   * Keeps a refunded state: a refund never makes a state matter longer, so the cell keeps its expiry; one
   * that decides as a fresh one would is dropped.
   */
  refunded(cells: Namespace<Cell>, key: string, cell: Cell, state: unknown): void {
    if (state === undefined) cells.delete(key);
    else cell.state = state;
  }
}

/** A namespace's bans by key, held apart from states (see MemoryStoreOptions.maxKeys). */
class Bans {
  constructor(private readonly cache: Namespace<Ban>) {}

  /** The ban in force on `key` at `now`; one that ended is dropped. */
  active(key: string, now: number): Ban | undefined {
    // No ban in the namespace (the common case): two field reads, not a lookup.
    if (this.cache.isEmpty) return undefined;
    const ban = this.cache.get(key);
    if (ban === undefined) return undefined;
    if (ban.until > now) return ban;
    this.cache.delete(key);
    return undefined;
  }

  /** Starts `ban` on `key`, or keeps the ban in force when it ends later. */
  start(key: string, ban: Ban, now: number): Ban {
    const kept = longerBan(this.active(key, now), ban);
    this.cache.set(key, kept);
    return kept;
  }

  delete(key: string): void {
    this.cache.delete(key);
  }
}

/** A grant time `grantedAgoMs` before `now` (NaN stays NaN: unknown). */
const grantedAt = (now: number, grantedAgoMs: number): number => now - grantedAgoMs;

/**
 * What every binding of the memory store shares: the store's cache, bans and time, and explicit bans, kept
 * where each kind of binding keeps a key's ban.
 */
abstract class MemoryBinding implements BoundStore, StateAccess {
  protected readonly cells: Namespace<Cell>;
  protected readonly bans: Bans;
  protected readonly time: StoreTime;
  readonly unbind: () => void;
  readonly source = 'memory';

  constructor(parts: BindingParts) {
    this.cells = parts.cells;
    this.bans = parts.bans;
    this.time = parts.time;
    this.unbind = parts.unbind;
  }

  /** Where this binding keeps `key`'s ban. */
  protected abstract banKey(key: string): string;

  abstract consume(key: string, permits: Permits, maxWaitMs: number): Decision;
  abstract peek(key: string): Decision;
  abstract reset(key: string): void;
  abstract refund(key: string, permits: Permits, grantedAgoMs: number): void;
  abstract penalize(key: string, permits: Permits): void;
  abstract take(key: string): readonly unknown[] | undefined;
  abstract seed(key: string, states: readonly unknown[], nowMs: number): void;

  block(key: string, ms: number): void {
    const now = this.time.clock.now();
    // A rule's ban that ends later is kept to its end, as the operator's: an explicit ban outranks the allow list.
    const ban = this.banKey(key);
    const until = Math.max(now + ms, this.bans.active(ban, now)?.until ?? 0);
    this.bans.delete(ban);
    this.bans.start(ban, { until, rule: EXPLICIT_BAN }, now);
  }

  unblock(key: string): void {
    this.bans.delete(this.banKey(key));
  }

  explicitBan(key: string): Decision | undefined {
    const ban = this.bans.active(this.banKey(key), this.time.clock.now());
    return ban?.rule === EXPLICIT_BAN ? this.peek(key) : undefined;
  }
}

/**
 * The bindings that keep all of a key's rules in one cell under the key itself (one rule's state, or a
 * policy's list of states), its ban under the same name: resets, refunds and penalties work on that cell.
 */
abstract class KeyCellBinding extends MemoryBinding {
  protected banKey(key: string): string {
    return key;
  }

  /** A cell's state after a refund at `now` of grants made at `at` (NaN: unknown). */
  protected abstract refunded(state: unknown, now: number, permits: Permits, at: number): unknown;

  /** A cell's state after a penalty at `now`, and how long it matters. */
  protected abstract penalized(state: unknown, now: number, permits: Permits): Adjusted<unknown>;

  reset(key: string): void {
    this.cells.delete(key);
    this.bans.delete(key);
  }

  refund(key: string, permits: Permits, grantedAgoMs: number): void {
    const cell = this.cells.get(key);
    if (cell === undefined) return;
    const now = this.time.clock.now();
    this.time.refunded(this.cells, key, cell, this.refunded(cell.state, now, permits, grantedAt(now, grantedAgoMs)));
  }

  penalize(key: string, permits: Permits): void {
    const cell = this.cells.get(key);
    const now = this.time.clock.now();
    const adjusted = this.penalized(cell?.state, now, permits);
    this.time.store(this.cells, key, cell, adjusted.state, now, adjusted.ttlMs);
  }
}

/** The common case, kept free of arrays: one rule, its state stored as is. */
class SingleRuleBinding extends KeyCellBinding {
  readonly #rule: Algorithm;
  readonly #rules: readonly Algorithm[];

  constructor(parts: BindingParts, rule: Algorithm) {
    super(parts);
    this.#rule = rule;
    this.#rules = [rule];
  }

  protected refunded(state: unknown, now: number, permits: Permits, at: number): unknown {
    return this.#rule.refund(state, now, permitsOfRule(permits, this.#rule), at).state;
  }

  protected penalized(state: unknown, now: number, permits: Permits): Adjusted<unknown> {
    return this.#rule.penalize(state, now, permitsOfRule(permits, this.#rule));
  }

  consume(key: string, asked: Permits, maxWaitMs: number): Decision {
    const permits = permitsOfRule(asked, this.#rule);
    const now = this.time.clock.now();
    const ban = this.bans.active(key, now);
    const cell = this.cells.get(key);
    const before = cell?.state;
    if (ban !== undefined) return this.#blocked(ban, before, now, permits);
    const o = this.#rule.consume(before, now, permits, maxWaitMs);
    // A grant, or a denial that anchored a never-seen key; a denial of a known key returns it untouched, and
    // never deletes it (undefined: one the rule takes as forgotten).
    if (o.state !== before && o.state !== undefined) this.time.store(this.cells, key, cell, o.state, now, o.ttlMs);
    if (!o.allowed && this.#rule.blockMs > 0) {
      const started = this.bans.start(key, { until: now + this.#rule.blockMs, rule: 0 }, now);
      return blockedDecision(this.#rules, [o], started.rule, started.until - now, permits);
    }
    return ruleDecision(this.#rule, o);
  }

  /** A blocked key's answer: what the rule would say, nothing taken, the ban as a floor. */
  #blocked(ban: Ban, state: unknown, now: number, permits: number): Decision {
    return blockedDecision(
      this.#rules,
      [this.#rule.consume(state, now, permits, 0)],
      ban.rule,
      ban.until - now,
      permits,
    );
  }

  take(key: string): readonly unknown[] | undefined {
    const cell = this.cells.get(key);
    if (cell === undefined) return undefined;
    this.cells.delete(key);
    return [cell.state];
  }

  seed(key: string, states: readonly unknown[], nowMs: number): void {
    const state = states[0];
    if (state === undefined || this.cells.get(key) !== undefined) return;
    // A penalty of nothing: the state as the rule keeps it, and how long it matters.
    const kept = this.#rule.penalize(state, nowMs, 0);
    this.time.store(this.cells, key, undefined, kept.state, nowMs, kept.ttlMs);
  }

  peek(key: string): Decision {
    const now = this.time.clock.now();
    const state = this.cells.peek(key)?.state;
    const ban = this.bans.active(key, now);
    if (ban !== undefined) return this.#blocked(ban, state, now, 1);
    const probe = this.#rule.consume(state, now, 1, 0);
    return { ...ruleDecision(this.#rule, probe), remaining: probe.allowed ? probe.remaining + 1 : probe.remaining };
  }
}

/** A policy: one cache entry per key holding every rule's state, decided all-or-nothing. */
class PolicyBinding extends KeyCellBinding {
  readonly #rules: readonly Algorithm[];

  constructor(parts: BindingParts, rules: readonly Algorithm[]) {
    super(parts);
    this.#rules = rules;
  }

  protected refunded(state: unknown, now: number, permits: Permits, at: number): unknown {
    const states = state as unknown[];
    return this.#rules.map((rule, r) => rule.refund(states[r], now, permitsOfRule(permits, rule), at).state);
  }

  protected penalized(state: unknown, now: number, permits: Permits): Adjusted<unknown> {
    const states = state as unknown[] | undefined;
    const adjusted = this.#rules.map((rule, r) => rule.penalize(states?.[r], now, permitsOfRule(permits, rule)));
    return { state: adjusted.map((a) => a.state), ttlMs: longestLife(adjusted) };
  }

  consume(key: string, permits: Permits): Decision {
    const now = this.time.clock.now();
    const cell = this.cells.get(key);
    const states = cell?.state as unknown[] | undefined;
    const ban = this.bans.active(key, now);
    const p = decidePolicy(this.#rules, states, now, permits);
    if (ban !== undefined) return blockedDecision(this.#rules, p.verdicts, ban.rule, ban.until - now, permits);
    if (p.states !== undefined) this.time.store(this.cells, key, cell, p.states, now, p.ttlMs);
    const banned = p.decision.allowed ? undefined : banAfter(this.#rules, p.verdicts, now);
    if (banned === undefined) return p.decision;
    const started = this.bans.start(key, banned, now);
    return blockedDecision(this.#rules, p.verdicts, started.rule, started.until - now, permits);
  }

  take(key: string): readonly unknown[] | undefined {
    const cell = this.cells.get(key);
    if (cell === undefined) return undefined;
    this.cells.delete(key);
    return cell.state as unknown[];
  }

  seed(key: string, states: readonly unknown[], nowMs: number): void {
    if (states.every((state) => state === undefined) || this.cells.get(key) !== undefined) return;
    const kept = this.#rules.map((rule, r) =>
      states[r] === undefined ? { state: undefined, ttlMs: 0 } : rule.penalize(states[r], nowMs, 0),
    );
    this.time.store(
      this.cells,
      key,
      undefined,
      kept.map((k) => k.state),
      nowMs,
      longestLife(kept),
    );
  }

  peek(key: string): Decision {
    const now = this.time.clock.now();
    const p = decidePolicy(this.#rules, this.cells.peek(key)?.state as unknown[] | undefined, now, 1);
    const ban = this.bans.active(key, now);
    if (ban !== undefined) return blockedDecision(this.#rules, p.verdicts, ban.rule, ban.until - now, 1);
    return withPeekedPermit(p.decision);
  }
}

/**
 * Rules counted against other identities than the request's key (a global rule, a per-tenant rule), and
 * plans (whose rules share state by name): one cell per (identity, rule), so every key's requests meet in a
 * shared rule's cell and a plan's rules in the cells of the same names. Decided all-or-nothing like any
 * policy. Cell keys (in the binding's own namespace) are the identity's length + ':' + identity + ':' + rule;
 * a key's ban is under the identity's part alone.
 */
class IdentityBinding extends MemoryBinding {
  readonly #rules: readonly Algorithm[];

  constructor(parts: BindingParts, rules: readonly Algorithm[]) {
    super(parts);
    this.#rules = rules;
  }

  protected banKey(key: string): string {
    return this.#identityKey(key);
  }

  #identityKey(identity: string): string {
    return `${identity.length}:${identity}`;
  }

  #cellKeys(key: string): string[] {
    return this.#rules.map((rule) => `${this.#identityKey(identityOf(rule, key))}:${stateName(rule)}`);
  }

  #decide(key: string, permits: Permits, maxWaitMs: number, write: boolean): Decision {
    const keys = this.#cellKeys(key);
    const now = this.time.clock.now();
    const cells = keys.map((k) => (write ? this.cells.get(k) : this.cells.peek(k)));
    const states = cells.map((cell) => cell?.state);
    const banKey = this.#identityKey(key);
    const ban = this.bans.active(banKey, now);
    const rules = this.#rules;
    if (ban !== undefined) {
      const verdicts = rules.map((rule, r) => rule.consume(states[r], now, permitsOfRule(permits, rule), 0));
      return blockedDecision(rules, verdicts, ban.rule, ban.until - now, permits);
    }
    let decision: Decision;
    let verdicts: readonly RuleVerdict[];
    if (rules.length === 1) {
      const rule = rules[0] as Algorithm;
      const o = rule.consume(states[0], now, permitsOfRule(permits, rule), maxWaitMs);
      // A denial never deletes a state (another plan may read it): an undefined one is not written.
      if (write && o.state !== states[0] && o.state !== undefined)
        this.time.store(this.cells, keys[0] as string, cells[0], o.state, now, o.ttlMs);
      decision = ruleDecision(rule, o);
      verdicts = [o];
    } else {
      const p = decidePolicy(rules, states, now, permits);
      if (write && p.states !== undefined) {
        p.states.forEach((state, r) => {
          if (state !== undefined) this.time.store(this.cells, keys[r] as string, cells[r], state, now, p.ttlMs);
        });
      }
      decision = p.decision;
      verdicts = p.verdicts;
    }
    if (!write) return withPeekedPermit(decision);
    const banned = decision.allowed ? undefined : banAfter(rules, verdicts, now);
    if (banned === undefined) return decision;
    const started = this.bans.start(banKey, banned, now);
    return blockedDecision(rules, verdicts, started.rule, started.until - now, permits);
  }

  consume(key: string, permits: Permits, maxWaitMs: number): Decision {
    return this.#decide(key, permits, maxWaitMs, true);
  }

  take(key: string): readonly unknown[] | undefined {
    let any = false;
    const states = this.#cellKeys(key).map((k) => {
      const cell = this.cells.get(k);
      if (cell === undefined) return undefined;
      any = true;
      this.cells.delete(k);
      return cell.state;
    });
    return any ? states : undefined;
  }

  seed(key: string, states: readonly unknown[], nowMs: number): void {
    const keys = this.#cellKeys(key);
    this.#rules.forEach((rule, r) => {
      const k = keys[r] as string;
      if (states[r] === undefined || this.cells.get(k) !== undefined) return;
      const kept = rule.penalize(states[r], nowMs, 0);
      this.time.store(this.cells, k, undefined, kept.state, nowMs, kept.ttlMs);
    });
  }

  peek(key: string): Decision {
    return this.#decide(key, 1, 0, false);
  }

  /** Forgets the request key's own rules and its ban; rules counted against other identities are shared, and stay. */
  reset(key: string): void {
    const keys = this.#cellKeys(key);
    this.#rules.forEach((rule, r) => {
      if (rule.key === undefined) this.cells.delete(keys[r] as string);
    });
    this.bans.delete(this.#identityKey(key));
  }

  /** The key's own rules only: a shared rule's permits are every key's. */
  refund(key: string, permits: Permits, grantedAgoMs: number): void {
    const keys = this.#cellKeys(key);
    const now = this.time.clock.now();
    const at = grantedAt(now, grantedAgoMs);
    this.#rules.forEach((rule, r) => {
      const k = keys[r] as string;
      const cell = this.cells.get(k);
      if (rule.key === undefined && cell !== undefined)
        this.time.refunded(this.cells, k, cell, rule.refund(cell.state, now, permitsOfRule(permits, rule), at).state);
    });
  }

  /** Every rule the key is counted against: what a response really cost was spent from shared budgets too. */
  penalize(key: string, permits: Permits): void {
    const keys = this.#cellKeys(key);
    const now = this.time.clock.now();
    this.#rules.forEach((rule, r) => {
      const k = keys[r] as string;
      const cell = this.cells.get(k);
      const adjusted = rule.penalize(cell?.state, now, permitsOfRule(permits, rule));
      this.time.store(this.cells, k, cell, adjusted.state, now, adjusted.ttlMs);
    });
  }
}

/** A peek's decision: it took nothing, so the permit it probed with is still there. */
function withPeekedPermit(d: Decision): Decision {
  if (!d.allowed) return d;
  return {
    ...d,
    remaining: d.remaining + 1,
    ...(d.rules ? { rules: d.rules.map((r) => ({ ...r, remaining: r.remaining + 1 })) } : {}),
  };
}

/** The longest life among adjusted states: a policy's states are kept together. */
function longestLife(adjusted: readonly Adjusted<unknown>[]): number {
  return Math.max(...adjusted.map((a) => a.ttlMs));
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
