import type { Algorithm } from '../algorithms/algorithm.js';
import type { CarryMode } from '../algorithms/carry.js';
import type { Clock } from '../foundation/clock.js';
import type { Decision } from '../foundation/decision.js';
import type { DecisionNote, DecisionSource } from './observe.js';

/** Where a grant being refunded was made (see BoundStore.refund). */
export type GrantSource = 'store' | 'fallback';

/** What a limiter hands its store: the rules to enforce and the namespace of its keys. */
export interface RuleSet {
  readonly rules: readonly Algorithm[];
  /** Namespace of the limiter's keys; limiters with different prefixes never share state. */
  readonly prefix: string;
  /**
   * Set by a limiter with plans: every rule of every plan (`rules` is one plan's). Rules of one name share
   * state across plans, so the store keeps states by rule name and claims the prefix for all of them.
   */
  readonly plans?: readonly Algorithm[];
  /**
   * Keeps this binding's states apart from the limiter's other bindings' (undefined: the limiter's first
   * configuration): a later configuration generation (`limiter.reconfigure`: `g2`, `g3`, ...) or one key's
   * override (`o1`, ...). Rules bound apart never read a state kept under other parameters as their own; a
   * key's states are carried from one binding to another (see StateAccess). Bans are the key's in every one.
   */
  readonly apart?: string;
}

/**
 * A binding's states read and written whole, for carrying a key's states from one configuration generation
 * to the next (limiter.reconfigure). States are in the binding's rule order.
 */
export interface StateAccess {
  /** Removes and returns `key`'s states (undefined for a rule with none), or undefined when it holds none. */
  take(key: string): readonly unknown[] | undefined;
  /** Keeps `states` for `key`, decided at `nowMs`, for each rule that holds none (undefined: nothing to keep). */
  seed(key: string, states: readonly unknown[], nowMs: number): void;
}

/** A limiter's rules as in force, and the version of its configuration (1 until the first reconfigure). */
export interface LimiterConfiguration {
  readonly version: number;
  readonly rules: readonly Algorithm[];
}

/**
 * A binding whose rules the store keeps for every node of its prefix (a Redis store): `limiter.reconfigure`
 * changes them there, and the binding follows the changes other nodes make (it decides under the version
 * in force, marks its decisions with it, and says what it is in `configuration`).
 */
export interface SharedRules {
  /** The configuration in force, as this node last learned it. */
  readonly configuration: LimiterConfiguration;
  /**
   * Stores `rules` for every node, carrying each key's states by `carry` on its first touch; resolves with
   * the configuration in force once every node's next decision obeys it. Rejects with SluiceError
   * 'CONFLICT' when another node changed the configuration first (nothing changed).
   */
  reconfigure(rules: readonly Algorithm[], carry: CarryMode): Promise<LimiterConfiguration>;
  /** Gives `key` rules of its own for every node, carrying what it used (see limiter.override). */
  override(key: string, rules: readonly Algorithm[]): Promise<void>;
  /** Takes `key`'s override away for every node, carrying what it used back; no override: nothing. */
  removeOverride(key: string): Promise<void>;
  /** Every override in force, as the store holds it, in key order. */
  overrides(): Promise<ReadonlyArray<{ readonly key: string; readonly rules: readonly Algorithm[] }>>;
}

/**
 * True for a binding whose rules its store keeps for every node (see SharedRules).
 * @example
 * if (hasSharedRules(bound)) await bound.reconfigure(rules, 'used') // the store changes them for every node
 */
export function hasSharedRules(bound: BoundStore): bound is BoundStore & SharedRules {
  const b = bound as Partial<SharedRules>;
  return typeof b.reconfigure === 'function' && b.configuration !== undefined;
}

/**
 * What a store can do beyond one rule per limiter, declared so that `createLimiter` refuses the rest at
 * construction with a typed error naming the store and the control, rather than the store ignoring it.
 * A store that declares nothing can do everything.
 */
export interface StoreCapabilities {
  /** The store's name in errors (its factory's: `leasedStore`, `dividedStore`). */
  readonly name: string;
  /** Several rules per limiter, all of which must allow (a policy). */
  readonly policies: boolean;
  /** Plans: the rules of a key chosen by its plan. */
  readonly plans: boolean;
  /** Bans: a rule's `blockMs`, and `limiter.block` / `unblock`. */
  readonly bans: boolean;
  /**
   * Access lists held for every node (`limiter.allow`, `deny`, `unlist`, `accessList`). False: the store keeps
   * none yet, and a limiter refuses a change of its lists (an entry would hold in one process only).
   * @default true
   */
  readonly accessLists?: boolean | undefined;
}

/**
 * Where limiter state lives. A store decides with the algorithms' pure functions (memory) or their Redis
 * scripts; either way a decision for one key is atomic: concurrent decisions for a key never both take
 * the last permit.
 *
 * A Store is made by an engine's factory (memoryStore, redisStore, dividedStore, leasedStore) and passed to
 * `createLimiter({ store })`; a user names the type, never implements it. The contract below is for those
 * factories (store authors' types are internal: @sluice/core/internal).
 *
 * Contract:
 * - `consume` grants `permits` only if every rule allows; a denial consumes nothing (it may only anchor
 *   a key never seen).
 * - `maxWaitMs` > 0 lets a single reserving rule grant with `waitMs <= maxWaitMs`.
 * - `peek` reports without consuming; `reset` forgets a key under every rule, and its ban.
 * - A key that is blocked (a rule's `blockMs` ban, or `block`) is denied with `blocked: true` until the ban
 *   ends (see blockedDecision); a denial by a rule with `blockMs` starts one.
 * - Results may be synchronous (memory) or promises (network); callers handle both.
 *
 * The controls (`refund`, `penalize`, `block`, `unblock`) are optional for stores of your own; a limiter
 * whose store lacks one refuses it with SluiceError('UNSUPPORTED').
 */
export interface Store {
  /**
   * The clock the store decides with, when it is this process's (a memory store, a Redis store with a
   * client clock). A limiter waits on it too; one that decides on the server's clock leaves it undefined.
   */
  readonly clock?: Clock | undefined;
  /**
   * For a store with a backend that can be away (Redis): true while a fail mode decides instead of it.
   * A limiter over a store that has this property is listed for metrics (`sluice.store.degraded`).
   */
  readonly degraded?: boolean | undefined;
  /** What it cannot do (see StoreCapabilities); undefined: everything. */
  readonly capabilities?: StoreCapabilities | undefined;
  /** Binds a limiter's rules and prefix; called once per limiter (per plan). */
  bind(ruleSet: RuleSet): BoundStore;
  /**
   * Resolves once the store's start-up check of every limiter bound so far passed (`limiter.ready()` waits
   * for it); a store with nothing to check may leave it out.
   */
  ready?(): Promise<void>;
  /** Releases what the store holds (timers, connections of its own; never a client you passed in). */
  close(): Promise<void>;
}

/**
 * A call's own count of each rule, by rule name: `{ rpm: 1, tpm: 1_200 }` counts 1 against the rule named
 * `rpm` and 1,200 against `tpm`, in one decision (an LLM provider's requests and tokens per minute). A rule
 * the object does not name is asked for 0: it lets the call through unless it is already past its limit.
 */
export type RulePermits = Readonly<Record<string, number>>;

/** What one call asks of a key's rules: the same count of every rule, or each rule's own (RulePermits). */
export type Permits = number | RulePermits;

/**
 * The count `permits` asks of `rule`.
 * @example
 * permitsOfRule({ rpm: 1, tpm: 1_200 }, tpmRule) // 1200
 * permitsOfRule(3, tpmRule)                       // 3
 */
export function permitsOfRule(permits: Permits, rule: Algorithm): number {
  if (typeof permits === 'number') return permits;
  return Object.hasOwn(permits, rule.name) ? (permits[rule.name] as number) : 0;
}

/**
 * The one count `permits` asks of every rule of `rules`, or undefined when it asks different counts of
 * different rules (a store that decides one count per call then refuses it).
 * @example
 * uniformPermits({ api: 5 }, [apiRule])               // 5
 * uniformPermits({ rpm: 1, tpm: 1_200 }, [rpm, tpm]) // undefined
 */
export function uniformPermits(permits: Permits, rules: readonly Algorithm[]): number | undefined {
  if (typeof permits === 'number') return permits;
  const [first, ...rest] = rules.map((rule) => permitsOfRule(permits, rule));
  return first !== undefined && rest.every((count) => count === first) ? first : undefined;
}

/**
 * The most `permits` asks of any one rule: a call's size where one number tells it (an event's count).
 * @example
 * mostPermits({ rpm: 1, tpm: 1_200 }) // 1200
 * mostPermits(3)                      // 3
 */
export function mostPermits(permits: Permits): number {
  if (typeof permits === 'number') return permits;
  return Math.max(0, ...Object.values(permits));
}

/**
 * `from` less `taken`, rule by rule, never below 0: one number when every rule of `rules` is left the same.
 * @example
 * lessPermits({ rpm: 1, tpm: 1_200 }, { tpm: 200 }, [rpm, tpm]) // { rpm: 1, tpm: 1000 }
 * lessPermits(5, 2, [rpm, tpm])                              // 3
 */
export function lessPermits(from: Permits, taken: Permits, rules: readonly Algorithm[]): Permits {
  if (typeof from === 'number' && typeof taken === 'number') return Math.max(0, from - taken);
  const rest: RulePermits = Object.fromEntries(
    rules.map((rule) => [rule.name, Math.max(0, permitsOfRule(from, rule) - permitsOfRule(taken, rule))]),
  );
  return uniformPermits(rest, rules) ?? rest;
}

/** A store bound to one limiter's rules and prefix. */
export interface BoundStore {
  /** Where this binding's decisions are made, when that is always one place (`'memory'`); see `consume`'s note. */
  readonly source?: DecisionSource | undefined;
  /**
   * Decides `permits` for `key` (see Permits: one count of every rule, or each rule's own). `note` is given
   * only while something observes decisions: a store whose decisions come from several places (Redis, its
   * deny cache, a fail mode) sets `note.source` to the one that made this decision.
   */
  consume(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision>;
  /** The key's standing for one permit, consuming nothing. */
  peek(key: string): Decision | Promise<Decision>;
  /** Forgets the key under every rule, and its ban. */
  reset(key: string): void | Promise<void>;
  /**
   * Gives back up to `permits` (each rule's own count, when given so) to each rule counted against `key` itself (rules shared with other keys keep
   * theirs), never beyond a fresh state; atomic per key. `grantedMsAgo` is how long ago the grant was asked
   * for (NaN: unknown): a window rule gives back only from the window it was counted in. `grant` says where
   * the grant was made: `'fallback'` (a fail mode: only its own state, if it keeps one, takes it back),
   * `'store'` (the store's backend: never the fail mode's state, even while the backend is away), or
   * undefined when not known (wherever the store decides now).
   */
  refund?(key: string, permits: Permits, grantedMsAgo: number, grant?: GrantSource): void | Promise<void>;
  /**
   * Takes `permits` from every rule the key is counted against (each rule's own count, when given so), past
   * the limit if need be; atomic per key.
   */
  penalize?(key: string, permits: Permits): void | Promise<void>;
  /**
   * Blocks `key` for `ms` from now (a ban in force that ends later is kept). Undefined for a store that keeps
   * no bans (the limiter refuses `block`, naming the store).
   */
  block?: ((key: string, ms: number) => void | Promise<void>) | undefined;
  /** Lifts a ban on `key`, whoever set it (undefined where `block` is). */
  unblock?: ((key: string) => void | Promise<void>) | undefined;
  /**
   * The key's standing (as `peek` says it, `blocked: true`) while it holds a ban set by `block`; undefined when
   * it holds none, or a rule's `blockMs` ban only: an operator's block outranks the allow list, a rule's ban
   * does not (an allowed key skips the rules). Undefined where `block` is; where it is, the limiter asks it of
   * every allowed key, so a store answers without I/O when it can.
   */
  explicitBan?: ((key: string) => Decision | undefined | Promise<Decision | undefined>) | undefined;
  /**
   * Unbinds: the limiter is closed. The store drops what it held for this binding (its prefix claim, caches,
   * subscriptions), so a closed limiter costs nothing and its prefix may be bound again with other rules.
   * States already written stay where they are (they expire on their own).
   */
  unbind?(): void | Promise<void>;
}
