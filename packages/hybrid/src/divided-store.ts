import { type Clock, SluiceError, type Store } from '@sluice/core';
import {
  type AccessListBinding,
  type AccessListStore,
  type BoundStore,
  type LimitedKeysBinding,
  type LimitedKeysStore,
  type RuleSet,
  type StoreCapabilities,
  emitSafely,
  inCall,
  parseOptions,
} from '@sluice/core/internal';
import { hostOfStore } from './engine-choice.js';
import { StoreEmitter } from './store-emitter.js';
import { DividedBinding } from './divided-binding.js';
import { type DivideContext, type DivideSettings, divideContext } from './divided-context.js';
import type { DividedEvents } from './divided-events.js';
import { DIVIDED_STORE_OPTIONS, type DividedStoreOptions } from './divided-options.js';
import { LimiterTables } from './limiter-tables.js';

/** What a divided store cannot do: a share of one rule says nothing of another's; a ban must hold fleet-wide. */
const DIVIDED_CAPABILITIES: StoreCapabilities = { name: 'dividedStore', policies: false, plans: false, bans: false };

/**
 * Divided mode's store (dividedStore): each node enforces its share of the limit locally with the core
 * algorithm; Redis only sees heartbeats. No Redis call on the decision path. A key's state is the rule held at
 * this node's share (sharedRule, the same rule every fail mode holds a share with): carried over, never dropped
 * or refilled, when the share changes.
 * @example
 * const store = dividedStore({ redis, share: 'demand' }) // a DividedStore
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 1_000, windowMs: 1_000 }), store })
 */
export class DividedStore extends StoreEmitter<DividedEvents> implements Store, LimitedKeysStore, AccessListStore {
  /** Decisions are this process's: limiters wait on the same clock. */
  readonly clock: Clock;
  /** One rule per limiter, no plans, no bans: createLimiter refuses them, naming this store. */
  readonly capabilities = DIVIDED_CAPABILITIES;
  readonly #ctx: DivideContext;
  readonly #bindings = new Set<DividedBinding>();
  readonly #tables: LimiterTables;
  #closed = false;

  constructor(o: DivideSettings) {
    super();
    const host = hostOfStore('dividedStore', o, (error) => emitSafely(this, 'store-error', error));
    this.#ctx = divideContext(o, host, this);
    this.clock = this.#ctx.clock;
    // No channel: this mode keeps no subscriber per node (see DividedBinding); lists are read every refreshMs.
    this.#tables = new LimiterTables(host, false);
  }

  /** This node's id in the membership: the nodeId given, or a new one if another live process had it. */
  get nodeId(): string {
    return this.#ctx.identity.id;
  }

  /**
   * The start-up check of the heartbeat script's commands on this limiter's keys (see RedisStore.ready);
   * then each limiter decides under its configuration as stored (limiter.reconfigure on another node).
   */
  async ready(): Promise<void> {
    await this.#ctx.host.checks.ready();
    await Promise.all([...this.#bindings].map((binding) => binding.refresh()));
  }

  bind(ruleSet: RuleSet): BoundStore {
    // A closed store opens nothing again (its heartbeats, its checks).
    if (this.#closed) throw new SluiceError('CLOSED', 'dividedStore: this store is closed');
    const rule = this.#tables.enrol('dividedStore', ruleSet, (held) =>
      this.#ctx.o.reserve > 0 ? { heartbeat: true, lease: [held.kind], adjust: [held.kind] } : { heartbeat: true },
    );
    const binding: DividedBinding = new DividedBinding(this.#ctx, rule, ruleSet.prefix, () =>
      this.#bindings.delete(binding),
    );
    this.#bindings.add(binding);
    return binding;
  }

  /** A limiter's allow and deny lists on Redis, held by every process with its prefix (see RedisAccessLists). */
  bindAccessList(prefix: string): AccessListBinding {
    return this.#tables.bindAccessList(prefix);
  }

  /** A limiter's limited-keys board on Redis, shared by every process with its prefix (see RedisBoards). */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    return this.#tables.bindLimitedKeys(prefix);
  }

  /** Leaves every membership (one last call per slot, so the others take up these shares at their next heartbeat). */
  async close(): Promise<void> {
    this.#closed = true;
    const bindings = [...this.#bindings];
    this.#bindings.clear();
    for (const binding of bindings) binding.release();
    await Promise.all([this.#ctx.membership.close(), ...bindings.map((b) => b.closeReserve())]);
    await this.#ctx.host.close();
  }
}

/**
 * Divided mode as a store: each node enforces its share of the limit locally with the core algorithm; the
 * share comes from heartbeats in Redis. No Redis call on the decision path; approximate (a membership change
 * takes up to 2 heartbeats to reach every node). When Redis is unreachable a node keeps its last share and
 * holds its part of the reserve, charged to the reserve when Redis answers again. One
 * rule per limiter, no plans, no bans: createLimiter refuses them, naming the store. The store emits
 * `membership`, `store-error` and `store-recovered`; `store.close()` leaves the membership.
 *
 * @example
 * const store = dividedStore({ redis, share: 'demand' })
 * const limiter = createLimiter({ rules: fixedWindow({ limit: 10_000, windowMs: 1_000 }), store })
 */
export function dividedStore(options: DividedStoreOptions): DividedStore {
  return inCall(
    'dividedStore',
    () => new DividedStore(parseOptions('dividedStore options', DIVIDED_STORE_OPTIONS, options, true)),
  );
}
