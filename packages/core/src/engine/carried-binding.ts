import type { Algorithm } from '../algorithms/algorithm.js';
import { type CarryMode, carryState } from '../algorithms/carry.js';
import type { Clock } from '../foundation/clock.js';
import type { Decision } from '../foundation/decision.js';
import type { DecisionNote } from './observe.js';
import type { BoundStore, Permits, StateAccess } from './store.js';

/** The configuration generation a newer one carries keys' states from. */
export interface CarrySource {
  readonly bound: BoundStore & StateAccess;
  readonly rules: readonly Algorithm[];
  /** When none of its states can matter any more (on the limiter's clock): it is let go then. */
  readonly until: number;
  /** Lets it go (unbinds it); called once. */
  readonly release: () => void;
}

/**
 * Moves `key`'s states from one binding to another (an override set or removed): taken from `from`, carried
 * by rule name (what was used is kept), kept in `to`. Rules counted against other keys are never moved
 * (their state is every key's): overrides refuse them.
 */
export function moveStates(
  key: string,
  from: { readonly bound: StateAccess; readonly rules: readonly Algorithm[] },
  to: { readonly bound: StateAccess; readonly rules: readonly Algorithm[] },
  nowMs: number,
): void {
  const states = from.bound.take(key);
  if (states !== undefined) to.bound.seed(key, carriedStates(from.rules, to.rules, states, nowMs, 'used'), nowMs);
}

/**
 * `states` of `from` (rule order) as `to`'s (rule order), by rule name; a rule with a new name, or counted
 * against another identity than before (a scope set or dropped: a global count is no one key's), starts fresh.
 */
function carriedStates(
  from: readonly Algorithm[],
  to: readonly Algorithm[],
  states: readonly unknown[],
  nowMs: number,
  mode: CarryMode,
): unknown[] {
  return to.map((rule) => {
    const i = from.findIndex((old) => old.name === rule.name);
    const was = from[i];
    return was === undefined || was.scope !== rule.scope ? undefined : carryState(was, rule, states[i], nowMs, mode);
  });
}

/**
 * True when `bound` can hand its states over and take them (see StateAccess).
 * @example
 * if (hasStateAccess(bound)) bound.seed('user:1', states, now) // a store whose states can be carried
 */
export function hasStateAccess(bound: BoundStore): bound is BoundStore & StateAccess {
  const b = bound as Partial<StateAccess>;
  return typeof b.take === 'function' && typeof b.seed === 'function';
}

/**
 * A configuration generation's binding that carries each key's states over from the generation before it,
 * the first time the key is met (moved, so a reset or a refund can never bring an old state back), by rule
 * name and CarryMode, until the old states cannot matter any more; then it lets the old generation go. A
 * generation that carries from another carries from that one's own predecessor too (take() is carried), so
 * changes in quick succession lose nothing. What is not carried: a rule whose name is new starts fresh.
 * @example
 * const source = { bound: old, rules: oldRules, until: now + carryWindowMs(oldRules), release: () => old.unbind?.() }
 * const bound = new CarriedBinding(next, newRules, source, 'used', clock) // decides under newRules from now on
 */
export class CarriedBinding implements BoundStore, StateAccess {
  readonly #inner: BoundStore & StateAccess;
  readonly #rules: readonly Algorithm[];
  readonly #mode: CarryMode;
  readonly #clock: Clock;
  #source: CarrySource | undefined;
  // The inner binding's optional controls, where it has them (a limiter refuses the controls a store lacks).
  declare readonly refund?: NonNullable<BoundStore['refund']>;
  declare readonly penalize?: NonNullable<BoundStore['penalize']>;
  declare readonly block?: NonNullable<BoundStore['block']>;
  declare readonly unblock?: NonNullable<BoundStore['unblock']>;
  declare readonly explicitBan?: NonNullable<BoundStore['explicitBan']>;

  constructor(
    inner: BoundStore & StateAccess,
    rules: readonly Algorithm[],
    source: CarrySource,
    mode: CarryMode,
    clock: Clock,
  ) {
    this.#inner = inner;
    this.#rules = rules;
    this.#source = source;
    this.#mode = mode;
    this.#clock = clock;
    const { refund, penalize, block, unblock, explicitBan } = inner;
    if (refund !== undefined)
      this.refund = (key, permits, grantedMsAgo, grant) => {
        this.#carry(key);
        return refund.call(inner, key, permits, grantedMsAgo, grant);
      };
    if (penalize !== undefined)
      this.penalize = (key, permits) => {
        this.#carry(key);
        return penalize.call(inner, key, permits);
      };
    // A ban is the key's in every generation.
    if (block !== undefined) this.block = (key, ms) => block.call(inner, key, ms);
    if (unblock !== undefined) this.unblock = (key) => unblock.call(inner, key);
    if (explicitBan !== undefined) this.explicitBan = (key) => explicitBan.call(inner, key);
  }

  get source(): BoundStore['source'] {
    return this.#inner.source;
  }

  /** Moves `key`'s states over from the generation before, when it still holds some. */
  #carry(key: string): void {
    const source = this.#source;
    if (source === undefined) return;
    const now = this.#clock.now();
    if (now >= source.until) {
      this.#source = undefined;
      source.release();
      return;
    }
    const old = source.bound.take(key);
    if (old !== undefined) this.#inner.seed(key, carriedStates(source.rules, this.#rules, old, now, this.#mode), now);
  }

  consume(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    this.#carry(key);
    return this.#inner.consume(key, permits, maxWaitMs, note);
  }

  peek(key: string): Decision | Promise<Decision> {
    this.#carry(key);
    return this.#inner.peek(key);
  }

  /** Forgets the key in this generation and in those it carries from. */
  reset(key: string): void | Promise<void> {
    const before = this.#source?.bound.reset(key);
    const now = this.#inner.reset(key);
    if (before instanceof Promise || now instanceof Promise) return Promise.all([before, now]).then(() => undefined);
  }

  take(key: string): readonly unknown[] | undefined {
    this.#carry(key);
    return this.#inner.take(key);
  }

  seed(key: string, states: readonly unknown[], nowMs: number): void {
    this.#inner.seed(key, states, nowMs);
  }

  async unbind(): Promise<void> {
    const source = this.#source;
    this.#source = undefined;
    source?.release();
    await this.#inner.unbind?.();
  }
}
