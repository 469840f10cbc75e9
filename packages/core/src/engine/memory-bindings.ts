/**
 * The memory store's bindings of one key cell per key: a single rule (the common case) and a policy. What
 * every memory binding shares (bans, explicit bans) is here too; see memory-identity-binding.ts for rules
 * counted against other identities.
 */
import type { Adjusted, Algorithm } from '../algorithms/algorithm.js';
import { type Ban, EXPLICIT_BAN, banAfter, blockedDecision } from './ban.js';
import type { Decision } from '../foundation/decision.js';
import { decidePolicy, ruleDecision } from './policy.js';
import { type BoundStore, type Permits, type StateAccess, permitsOfRule } from './store.js';
import type { Namespace } from './key-generations.js';
import {
  type Bans,
  type BindingParts,
  type Cell,
  ListKeeper,
  RecordKeeper,
  type StateKeeper,
  type StoreTime,
  grantedAt,
  longestLife,
  withPeekedPermit,
} from './memory-cells.js';

/**
 * What every binding of the memory store shares: the store's cache, bans and time, and explicit bans, kept
 * where each kind of binding keeps a key's ban.
 */
export abstract class MemoryBinding implements BoundStore, StateAccess {
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
  abstract refund(key: string, permits: Permits, grantedMsAgo: number): void;
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
  /** How the key's cell keeps its state (see StateKeeper). */
  protected readonly keeper: StateKeeper;

  constructor(parts: BindingParts, keeper: StateKeeper) {
    super(parts);
    this.keeper = keeper;
  }

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

  refund(key: string, permits: Permits, grantedMsAgo: number): void {
    const cell = this.cells.get(key);
    if (cell === undefined) return;
    const now = this.time.clock.now();
    this.time.refunded(
      this.cells,
      key,
      cell,
      this.refunded(cell.state, now, permits, grantedAt(now, grantedMsAgo)),
      this.keeper,
    );
  }

  penalize(key: string, permits: Permits): void {
    const cell = this.cells.get(key);
    const now = this.time.clock.now();
    const adjusted = this.penalized(cell?.state, now, permits);
    this.time.store(this.cells, key, cell, adjusted.state, now, adjusted.ttlMs, this.keeper);
  }
}

/** The common case, kept free of arrays: one rule, its state stored as is. */
export class SingleRuleBinding extends KeyCellBinding {
  readonly #rule: Algorithm;
  readonly #rules: readonly Algorithm[];

  constructor(parts: BindingParts, rule: Algorithm) {
    super(parts, new RecordKeeper());
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
    if (o.state !== before && o.state !== undefined)
      this.time.store(this.cells, key, cell, o.state, now, o.ttlMs, this.keeper);
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
    this.time.store(this.cells, key, undefined, kept.state, nowMs, kept.ttlMs, this.keeper);
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
export class PolicyBinding extends KeyCellBinding {
  readonly #rules: readonly Algorithm[];

  constructor(parts: BindingParts, rules: readonly Algorithm[]) {
    super(parts, new ListKeeper(rules.length));
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
    if (p.states !== undefined) this.time.store(this.cells, key, cell, p.states, now, p.ttlMs, this.keeper);
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
      this.keeper,
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
