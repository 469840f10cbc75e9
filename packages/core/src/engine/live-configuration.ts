import type { Algorithm } from '../algorithms/algorithm.js';
import { CARRY_MODES, type CarryMode, carryWindowMs } from '../algorithms/carry.js';
import type { Clock } from '../foundation/clock.js';
import { SluiceError, SluiceRangeError, SluiceTypeError, callerNamed } from '../foundation/errors.js';
import { knownOptions } from '../foundation/options.js';
import { describe, positiveInteger, rateLimitKey } from '../foundation/validate.js';
import { CarriedBinding, hasStateAccess, moveStates } from './carried-binding.js';
import {
  OVERRIDES_OPTIONS,
  type OverridesOptions,
  type OverridesPage,
  RECONFIGURE_OPTIONS,
  type ReconfigureOptions,
} from './limiter-types.js';
import { type ParsedPlans, type PlanResolver, knownPlan } from './plans.js';
import { type Rules, normalizeRules } from './policy.js';
import type { LimiterSetup } from './limiter-setup.js';
import { checkCapabilities, storeNameOf } from './store-capabilities.js';
import { type BoundStore, type LimiterConfiguration, type RuleSet, type Store, hasSharedRules } from './store.js';

/** One set of rules bound to the store: the limiter's rules, one plan's, or one key's override. */
export interface Binding {
  /** The plan's name; undefined for a limiter without plans. */
  readonly plan: string | undefined;
  readonly rules: readonly Algorithm[];
  readonly bound: BoundStore;
  /** Only a single reserving rule can grant with a wait; a policy retries instead. */
  readonly reserves: boolean;
  /** True for a key's override (decisions say so). */
  readonly override?: true;
}

/** What a limiter's configuration tells the limiter, and asks of it. */
export interface ConfigurationHooks {
  /** Throws once the limiter is closed: a change that waited its turn past close is refused then. */
  readonly checkOpen: () => void;
  /** Called once a change has bound or unbound rules: the limiter's fast path depends on which are in force. */
  readonly changed: () => void;
}

/** The most overrides one page of `overrides()` lists unless it asks for fewer. */
const OVERRIDES_PAGE = 100;
const OVERRIDES_PAGE_MAX = 1000;

/**
 * The rules a limiter decides by, bound to its store: its rules or its plans, keys' overrides, and the
 * changes made to them while it runs (reconfigure, override, removeOverride), one at a time. The limiter
 * decides and controls; this says with which binding, and replaces bindings without losing what keys used.
 */
export class LiveConfiguration {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #prefix: string;
  readonly #maxKeyLength: number;
  /** Binds a set of rules to the store (see RuleSet). */
  readonly #bind: (ruleSet: RuleSet) => BoundStore;
  readonly #hooks: ConfigurationHooks;
  /** The binding used when no plan is named: the limiter's rules, or its first plan. */
  #default: Binding;
  #version = 1;
  /** Keys with rules of their own (override), and how many overrides were ever bound (their names apart). */
  readonly #overrides = new Map<string, Binding>();
  #overridesBound = 0;
  /** The change being made (reconfigure, override, removeOverride): changes are made one at a time. */
  #changing: Promise<unknown> = Promise.resolve();
  /** Each plan's binding, by plan name (undefined without plans). */
  readonly #bindings: ReadonlyMap<string, Binding> | undefined;
  readonly #plans: ParsedPlans | undefined;
  readonly #resolvePlan: PlanResolver | undefined;

  /** For a limiter with plans: each plan's rules, under the names they keep state by. */
  readonly plans: Readonly<Record<string, readonly Algorithm[]>> | undefined;

  constructor(setup: LimiterSetup, hooks: ConfigurationHooks) {
    const { store, bind } = setup;
    const { prefix, plans } = setup.options;
    this.#store = store;
    this.#clock = setup.clock;
    this.#prefix = prefix;
    this.#maxKeyLength = setup.options.maxKeyLength;
    this.#bind = bind;
    this.#hooks = hooks;
    this.#plans = plans;
    this.#resolvePlan = setup.options.plan;
    const binding = (plan: string | undefined, planRules: readonly Algorithm[]): Binding => ({
      plan,
      rules: planRules,
      bound: bind(
        plans === undefined ? { rules: planRules, prefix } : { rules: planRules, prefix, plans: plans.catalog },
      ),
      reserves: reservesAlone(planRules),
    });
    if (plans === undefined) {
      this.plans = undefined;
      this.#bindings = undefined;
      this.#default = binding(undefined, setup.options.rules as readonly Algorithm[]);
      return;
    }
    const bindings = new Map<string, Binding>();
    try {
      for (const name of plans.names) bindings.set(name, binding(name, plans.rules.get(name) as readonly Algorithm[]));
    } catch (error) {
      // A store that refused a plan (a Cluster-only restriction, say): nothing half-bound stays claimed.
      for (const b of bindings.values()) void b.bound.unbind?.();
      throw error;
    }
    this.#bindings = bindings;
    this.#default = bindings.get(plans.names[0] as string) as Binding;
    this.plans = Object.freeze(
      Object.fromEntries(plans.names.map((name) => [name, plans.rules.get(name) as readonly Algorithm[]])),
    );
  }

  /** The binding used when no plan is named: the limiter's rules (as last reconfigured), or its first plan. */
  get current(): Binding {
    return this.#default;
  }

  /** 1 until this limiter's first reconfigure, then one more after each (see configVersion for the store's). */
  get version(): number {
    return this.#version;
  }

  /** True while every key decides with `current`: no plans, no override. */
  get onlyCurrent(): boolean {
    return this.#bindings === undefined && this.#overrides.size === 0;
  }

  /** The rules in force (of the first plan, for a limiter with plans); a shared store's for every node. */
  get rules(): readonly Algorithm[] {
    return rulesOf(this.#default);
  }

  /** The version of the configuration in force (see Limiter.configVersion). */
  get configVersion(): number {
    const bound = this.#default.bound;
    return hasSharedRules(bound) ? bound.configuration.version : this.#version;
  }

  /** The key's own binding (its override), if it has one. */
  ownBinding(key: string): Binding | undefined {
    return this.#overrides.get(key);
  }

  /** Each plan's binding (undefined without plans). */
  planBindings(): IterableIterator<Binding> | undefined {
    return this.#bindings?.values();
  }

  /**
   * The binding a call for `key` decides with: the plan the call names, else the resolver's, else the first.
   * A limiter without plans refuses a plan. Synchronous unless the resolver is async.
   */
  binding(key: string, plan: unknown): Binding | Promise<Binding> {
    const own = this.#overrides.size === 0 ? undefined : this.#overrides.get(key);
    if (own !== undefined) return own;
    const plans = this.#plans;
    const bindings = this.#bindings;
    if (plans === undefined || bindings === undefined) {
      if (plan !== undefined)
        throw new SluiceRangeError(
          'plan',
          plan,
          `plan names one of a limiter's plans; this limiter has none (createLimiter({ plans }))`,
        );
      return this.#default;
    }
    if (plan !== undefined) return bindings.get(knownPlan(plans, plan)) as Binding;
    if (this.#resolvePlan === undefined) return this.#default;
    const resolved = this.#resolvePlan(key);
    const pick = (name: unknown): Binding => bindings.get(knownPlan(plans, name)) as Binding;
    if (!(resolved instanceof Promise)) return pick(resolved);
    // The limiter may have closed while the resolver ran: a call waiting on it fails as closed, and nothing
    // is decided (its bindings are being unbound).
    return resolved.then((name) => {
      this.#hooks.checkOpen();
      return pick(name);
    });
  }

  reconfigure(rules: Rules, options?: ReconfigureOptions): Promise<LimiterConfiguration> {
    return this.#oneAtATime(() => this.#reconfigure(rules, options));
  }

  override(key: string, rules: Rules): Promise<void> {
    return this.#oneAtATime(() => this.#override(key, rules));
  }

  removeOverride(key: string): Promise<void> {
    return this.#oneAtATime(() => this.#removeOverride(key));
  }

  /**
   * Makes `change` once the changes asked before it are made: two calls (an override set twice for one key,
   * a reconfigure beside it) never both read the binding the other is replacing.
   */
  #oneAtATime<T>(change: () => Promise<T>): Promise<T> {
    const made = this.#changing.then(change);
    this.#changing = made.catch(() => undefined);
    return made;
  }

  async #reconfigure(rules: Rules, options?: ReconfigureOptions): Promise<LimiterConfiguration> {
    try {
      this.#hooks.checkOpen();
      const next = normalizeRules(rules, 'rules');
      knownOptions('reconfigure options', RECONFIGURE_OPTIONS, options, false);
      const carry = carryOption(options?.carry);
      if (this.#bindings !== undefined) {
        throw new SluiceError(
          'UNSUPPORTED',
          'reconfigure: a limiter with plans cannot change its rules yet; close the limiter and create it ' +
            'with the new plans',
        );
      }
      const current = this.#default;
      const old = current.bound;
      if (hasSharedRules(old)) {
        // The store keeps the rules for every node: it checks them against the ones in force there.
        keepsKinds(old.configuration.rules, next);
        this.#checkStoreCan(next);
        return await old.reconfigure(next, carry);
      }
      keepsKinds(this.#default.rules, next);
      this.#checkStoreCan(next);
      const storeName = storeNameOf(this.#store);
      if (!hasStateAccess(old)) {
        throw new SluiceError(
          'UNSUPPORTED',
          `reconfigure: ${storeName} cannot carry keys' states over to new rules yet; close the limiter and ` +
            'create it with the new rules',
        );
      }
      const version = this.#version + 1;
      const bound = this.#bind({ rules: next, prefix: this.#prefix, apart: `g${version}` });
      if (!hasStateAccess(bound)) {
        await bound.unbind?.();
        throw new SluiceError('UNSUPPORTED', `reconfigure: ${storeName} cannot carry keys' states over to new rules`);
      }
      const source = {
        bound: old,
        rules: current.rules,
        until: this.#clock.now() + carryWindowMs(current.rules),
        release: () => void old.unbind?.(),
      };
      this.#default = {
        plan: undefined,
        rules: next,
        bound: new CarriedBinding(bound, next, source, carry, this.#clock),
        reserves: reservesAlone(next),
      };
      this.#version = version;
      this.#hooks.changed();
      return { version, rules: next };
    } catch (error) {
      throw callerNamed('reconfigure', error);
    }
  }

  /** Refuses rules the store declares it cannot honour (a policy, a ban), as createLimiter does. */
  #checkStoreCan(rules: readonly Algorithm[]): void {
    const can = this.#store.capabilities;
    if (can !== undefined) checkCapabilities(can, rules, undefined);
  }

  /** Every rule a key of this limiter can be decided by (every plan's): what an override's rules must agree with. */
  #allRules(): readonly Algorithm[] {
    return this.#plans?.catalog ?? this.#default.rules;
  }

  async #override(key: string, rules: Rules): Promise<void> {
    try {
      this.#hooks.checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const next = normalizeRules(rules, 'rules');
      if (this.#plans !== undefined) {
        // On a shared store an override is kept for every node beside the limiter's rules, and a limiter with
        // plans keeps none: refused on every store alike, before anything is bound or moved.
        throw new SluiceError(
          'UNSUPPORTED',
          'override: a limiter with plans takes no overrides (its plans are its rules, fixed at creation); give ' +
            'the key a plan of its own (plans: { ..., acme: rules }) and pick it with the plan option or the ' +
            'plan resolver',
        );
      }
      const shared = [...this.#allRules(), ...next].find((rule) => rule.scope !== undefined);
      if (shared !== undefined) {
        throw new SluiceRangeError(
          'rules',
          shared.name,
          `rule ${JSON.stringify(shared.name)} counts against another key than the request's: an override holds ` +
            "one key's own rules, and a limiter with shared rules takes none",
        );
      }
      keepsKinds(this.#allRules(), next);
      this.#checkStoreCan(next);
      const kept = this.#default.bound;
      if (hasSharedRules(kept)) {
        // The store keeps overrides for every node, beside the limiter's rules.
        await kept.override(key, next);
        return;
      }
      const from = await this.binding(key, undefined);
      const storeName = storeNameOf(this.#store);
      const bound = hasStateAccess(from.bound)
        ? this.#bind({ rules: next, prefix: this.#prefix, apart: `o${++this.#overridesBound}` })
        : undefined;
      if (bound === undefined || !hasStateAccess(bound) || !hasStateAccess(from.bound)) {
        await bound?.unbind?.();
        throw new SluiceError(
          'UNSUPPORTED',
          `override: ${storeName} cannot hold an override (it cannot carry a key's states between rules)`,
        );
      }
      moveStates(key, { bound: from.bound, rules: from.rules }, { bound, rules: next }, this.#clock.now());
      if (from.override !== undefined) await from.bound.unbind?.();
      const reserves = reservesAlone(next);
      this.#overrides.set(key, { plan: undefined, rules: next, bound, reserves, override: true });
      this.#hooks.changed();
    } catch (error) {
      throw callerNamed('override', error);
    }
  }

  async #removeOverride(key: string): Promise<void> {
    try {
      this.#hooks.checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const shared = this.#default.bound;
      if (hasSharedRules(shared)) {
        await shared.removeOverride(key);
        return;
      }
      const own = this.#overrides.get(key);
      if (own === undefined) return;
      this.#overrides.delete(key);
      const back = await this.binding(key, undefined);
      if (hasStateAccess(own.bound) && hasStateAccess(back.bound))
        moveStates(
          key,
          { bound: own.bound, rules: own.rules },
          { bound: back.bound, rules: back.rules },
          this.#clock.now(),
        );
      await own.bound.unbind?.();
      this.#hooks.changed();
    } catch (error) {
      throw callerNamed('removeOverride', error);
    }
  }

  async overrides(options?: OverridesOptions): Promise<OverridesPage> {
    try {
      this.#hooks.checkOpen();
      knownOptions('overrides options', OVERRIDES_OPTIONS, options, false);
      const cursor = options?.cursor;
      if (cursor !== undefined && typeof cursor !== 'string')
        throw new SluiceTypeError(
          'cursor',
          cursor,
          `cursor must be a page's cursor (a string), got ${describe(cursor)}`,
        );
      const count = options?.count === undefined ? OVERRIDES_PAGE : positiveInteger('count', options.count);
      if (count > OVERRIDES_PAGE_MAX)
        throw new SluiceRangeError('count', count, `count must be at most ${OVERRIDES_PAGE_MAX}, got ${count}`);
      const shared = this.#default.bound;
      const all = hasSharedRules(shared)
        ? await shared.overrides()
        : [...this.#overrides].map(([key, binding]) => ({ key, rules: binding.rules }));
      const after = all
        .filter(({ key }) => cursor === undefined || key > cursor)
        .sort((a, b) => compareKeys(a.key, b.key));
      const page = after.slice(0, count);
      return { overrides: page, cursor: after.length > count ? page.at(-1)?.key : undefined };
    } catch (error) {
      throw callerNamed('overrides', error);
    }
  }

  /** Unbinds every binding from the store (a closed limiter holds nothing there) and forgets the overrides. */
  async unbindAll(): Promise<void> {
    const bindings = this.#bindings === undefined ? [this.#default] : [...this.#bindings.values()];
    for (const b of [...bindings, ...this.#overrides.values()]) await b.bound.unbind?.();
    this.#overrides.clear();
  }
}

/**
 * The rules a binding decides by, as far as this limiter knows them: its own (a plan's, an override's), or
 * on a store that keeps the rules for every node, those of the configuration in force (a key's override
 * there is the store's: a rule of it that a call's per-rule permits do not name is asked for 0).
 */
export function rulesOf(binding: Binding): readonly Algorithm[] {
  const bound = binding.bound;
  return hasSharedRules(bound) ? bound.configuration.rules : binding.rules;
}

/** Whether rules can grant with a wait: a single reserving rule can; a policy retries instead. */
function reservesAlone(rules: readonly Algorithm[]): boolean {
  return rules.length === 1 && (rules[0] as Algorithm).reserves;
}

/** reconfigure's `carry`: 'used' unless given, else one of CARRY_MODES. */
function carryOption(value: unknown): CarryMode {
  if (value === undefined) return 'used';
  if (typeof value === 'string' && (CARRY_MODES as readonly string[]).includes(value)) return value as CarryMode;
  const modes = CARRY_MODES.map((mode) => JSON.stringify(mode)).join(', ');
  if (typeof value !== 'string')
    throw new SluiceTypeError('carry', value, `carry must be one of ${modes}, got ${describe(value)}`);
  throw new SluiceRangeError('carry', value, `carry must be one of ${modes}, got ${describe(value)}`);
}

/**
 * Refuses new rules that change a rule's kind under its name: a rule keeps its identity, and what keys used
 * under it, by name, and one kind's state means nothing to another.
 */
function keepsKinds(current: readonly Algorithm[], next: readonly Algorithm[]): void {
  for (const rule of next) {
    const old = current.find((r) => r.name === rule.name);
    if (old !== undefined && old.kind !== rule.kind) {
      throw new SluiceRangeError(
        'rules',
        rule.name,
        `rule ${JSON.stringify(rule.name)} is a ${old.kind}; it cannot become a ${rule.kind} under the same name ` +
          '(a rule keeps what keys used under it by name): give the new rule another name, and it starts fresh',
      );
    }
  }
}

/** Key order for pages of overrides (code unit order, as `sort()` and the stores' listings). */
function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
