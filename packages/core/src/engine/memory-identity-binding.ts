import type { Algorithm } from '../algorithms/algorithm.js';
import { identityOf, stateName } from '../algorithms/rule-name.js';
import { banAfter, blockedDecision } from './ban.js';
import type { Decision } from '../foundation/decision.js';
import { type RuleVerdict, decidePolicy, ruleDecision } from './policy.js';
import { type Permits, permitsOfRule } from './store.js';
import { MemoryBinding } from './memory-bindings.js';
import { type BindingParts, RecordKeeper, grantedAt, withPeekedPermit } from './memory-cells.js';

/**
 * Rules counted against other identities than the request's key (a global rule, a per-tenant rule), and
 * plans (whose rules share state by name): one cell per (identity, rule), so every key's requests meet in a
 * shared rule's cell and a plan's rules in the cells of the same names. Decided all-or-nothing like any
 * policy. Cell keys (in the binding's own namespace) are the identity's length + ':' + identity + ':' + rule;
 * a key's ban is under the identity's part alone.
 */
export class IdentityBinding extends MemoryBinding {
  readonly #rules: readonly Algorithm[];

  /** Each rule's states, in their own cells (see StateKeeper). */
  readonly #keepers: readonly RecordKeeper[];

  constructor(parts: BindingParts, rules: readonly Algorithm[]) {
    super(parts);
    this.#rules = rules;
    this.#keepers = rules.map(() => new RecordKeeper());
  }

  protected banKey(key: string): string {
    return this.#identityKey(key);
  }

  #keeper(r: number): RecordKeeper {
    return this.#keepers[r] as RecordKeeper;
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
        this.time.store(this.cells, keys[0] as string, cells[0], o.state, now, o.ttlMs, this.#keeper(0));
      decision = ruleDecision(rule, o);
      verdicts = [o];
    } else {
      const p = decidePolicy(rules, states, now, permits);
      if (write && p.states !== undefined) {
        p.states.forEach((state, r) => {
          if (state !== undefined)
            this.time.store(this.cells, keys[r] as string, cells[r], state, now, p.ttlMs, this.#keeper(r));
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
      this.time.store(this.cells, k, undefined, kept.state, nowMs, kept.ttlMs, this.#keeper(r));
    });
  }

  peek(key: string): Decision {
    return this.#decide(key, 1, 0, false);
  }

  /** Forgets the request key's own rules and its ban; rules counted against other identities are shared, and stay. */
  reset(key: string): void {
    const keys = this.#cellKeys(key);
    this.#rules.forEach((rule, r) => {
      if (rule.scope === undefined) this.cells.delete(keys[r] as string);
    });
    this.bans.delete(this.#identityKey(key));
  }

  /** The key's own rules only: a shared rule's permits are every key's. */
  refund(key: string, permits: Permits, grantedMsAgo: number): void {
    const keys = this.#cellKeys(key);
    const now = this.time.clock.now();
    const at = grantedAt(now, grantedMsAgo);
    this.#rules.forEach((rule, r) => {
      const k = keys[r] as string;
      const cell = this.cells.get(k);
      if (rule.scope === undefined && cell !== undefined)
        this.time.refunded(
          this.cells,
          k,
          cell,
          rule.refund(cell.state, now, permitsOfRule(permits, rule), at).state,
          this.#keeper(r),
        );
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
      this.time.store(this.cells, k, cell, adjusted.state, now, adjusted.ttlMs, this.#keeper(r));
    });
  }
}
