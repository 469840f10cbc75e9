import { type Clock, systemClock } from '../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { type ParsedOptions, parseOptions } from '../foundation/options.js';
import { LIMITER_OPTIONS, type LimiterOptions } from './limiter-options.js';
import { MemoryStore } from './memory-store.js';
import { checkCapabilities } from './store-capabilities.js';
import type { BoundStore, RuleSet, Store } from './store.js';

/** What createLimiter's options come to, checked against each other and against the store. */
export interface LimiterSetup {
  readonly options: ParsedOptions<typeof LIMITER_OPTIONS>;
  /** Where the limiter's state lives: the store it was given, or a memory store of its own. */
  readonly store: Store;
  /** True for a memory store the limiter made itself: closing the limiter closes it. */
  readonly ownsStore: boolean;
  /** The clock the limiter waits on: the one given, else the store's, else systemClock. */
  readonly clock: Clock;
  /** Binds a set of rules to the store (see RuleSet). */
  readonly bind: (ruleSet: RuleSet) => BoundStore;
}

/**
 * Checks createLimiter's options (each, then rules against plans, the clock against the store's, the rules
 * against what the store declares it cannot do) and picks the store. These refusals come before anything is
 * bound or started; a store may still refuse the rules when they are bound (the limiter then stops what it
 * started).
 */
export function limiterSetup(options: LimiterOptions): LimiterSetup {
  const o = parseOptions('createLimiter options', LIMITER_OPTIONS, options, true);
  const planned = o.plans !== undefined;
  // A store that cannot hold plans says so first: naming the store tells more than "rules or plans".
  const can = o.store?.capabilities;
  if (planned && can !== undefined && !can.plans) checkCapabilities(can, undefined, o.plans);
  if (planned && o.rules !== undefined) {
    throw new SluiceTypeError(
      'plans',
      options.plans,
      'createLimiter takes rules or plans, not both: put the rules in a plan',
    );
  }
  if (!planned && o.rules === undefined) {
    throw new SluiceTypeError('rules', undefined, 'createLimiter needs rules (one rule or a policy) or plans');
  }
  if (!planned && o.plan !== undefined) {
    throw new SluiceTypeError(
      'plan',
      o.plan,
      "plan picks one of the limiter's plans: it needs plans ({ free: rules, pro: rules })",
    );
  }
  const clock = o.clock ?? o.store?.clock ?? systemClock;
  if (o.store === undefined) {
    const store = new MemoryStore({ clock });
    // Plans bind the store once per plan; a limiter of one rule set keeps it to itself (unprefixed keys).
    return { options: o, store, ownsStore: true, clock, bind: (ruleSet) => store.bind(ruleSet, !planned) };
  }
  const store = o.store;
  // Decisions follow the store's clock and waits the limiter's: two different clocks would disagree.
  if (o.clock !== undefined && store.clock !== undefined && store.clock !== o.clock) {
    throw new SluiceRangeError(
      'clock',
      o.clock,
      'clock must be the clock the store was created with (pass it to the store, e.g. memoryStore({ clock }))',
    );
  }
  if (store.capabilities !== undefined) checkCapabilities(store.capabilities, o.rules, o.plans);
  return { options: o, store, ownsStore: false, clock, bind: (ruleSet) => store.bind(ruleSet) };
}
