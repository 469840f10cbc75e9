import type { Algorithm } from './algorithms/algorithm.js';
import type { Clock } from './clock.js';
import type { Decision } from './decision.js';

/** What a limiter hands its store: the rules to enforce and the namespace of its keys. */
export interface RuleSet {
  readonly rules: readonly Algorithm[];
  /** Namespace of the limiter's keys; limiters with different prefixes never share state. */
  readonly prefix: string;
}

/**
 * Where limiter state lives. A store decides with the algorithms' pure functions (memory) or their Redis
 * scripts; either way a decision for one key is atomic: concurrent decisions for a key never both take
 * the last permit.
 *
 * Contract:
 * - `consume` grants `permits` only if every rule allows; a denial consumes nothing (it may only anchor
 *   a key never seen).
 * - `maxWaitMs` > 0 lets a single reserving rule grant with `waitMs <= maxWaitMs`.
 * - `peek` reports without consuming; `reset` forgets a key under every rule.
 * - Results may be synchronous (memory) or promises (network); callers handle both.
 */
export interface Store {
  /**
   * The clock the store decides with, when it is this process's (a memory store, a Redis store with a
   * client clock). A limiter waits on it too; one that decides on the server's clock leaves it undefined.
   */
  readonly clock?: Clock;
  bind(ruleSet: RuleSet): BoundStore;
  close(): Promise<void>;
}

/** A store bound to one limiter's rules and prefix. */
export interface BoundStore {
  consume(key: string, permits: number, maxWaitMs: number): Decision | Promise<Decision>;
  peek(key: string): Decision | Promise<Decision>;
  reset(key: string): void | Promise<void>;
  /**
   * Unbinds: the limiter is closed. The store drops what it held for this binding (its prefix claim, caches,
   * subscriptions), so a closed limiter costs nothing and its prefix may be bound again with other rules.
   * States already written stay where they are (they expire on their own).
   */
  unbind?(): void | Promise<void>;
}
