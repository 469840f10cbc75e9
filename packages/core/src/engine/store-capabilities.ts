import type { Algorithm } from '../algorithms/algorithm.js';
import { SluiceError, SluiceRangeError } from '../foundation/errors.js';
import type { ParsedPlans } from './plans.js';
import type { Store, StoreCapabilities } from './store.js';

// What a limiter refuses because its store declares it cannot do it (Store.capabilities): checked at
// construction and on every change of rules, so a leased or divided store never half-honours a policy, a
// plan or a ban; and the store's optional controls, refused by name when missing.

/**
 * Refuses, naming the store and the control, what a store declares it cannot do: a policy, plans, a ban.
 * `rules` is the limiter's rules (undefined with plans).
 */
export function checkCapabilities(
  can: StoreCapabilities,
  rules: readonly Algorithm[] | undefined,
  plans: ParsedPlans | undefined,
): void {
  if (plans !== undefined && !can.plans) {
    throw new SluiceRangeError(
      'plans',
      plans.names,
      `${can.name} cannot honour plans: it enforces one set of rules per limiter; make one limiter per plan, ` +
        `or use a store with plans (memoryStore, redisStore)`,
    );
  }
  const all = rules ?? plans?.catalog ?? [];
  if (rules !== undefined && rules.length > 1 && !can.policies) {
    throw new SluiceRangeError(
      'rules',
      rules.map((rule) => rule.name),
      `${can.name} enforces one rule, got a policy of ${rules.length}; use one limiter per rule, or a store ` +
        `with policies (memoryStore, redisStore)`,
    );
  }
  const banning = all.find((rule) => rule.blockMs > 0);
  if (banning !== undefined && !can.bans) {
    throw new SluiceRangeError(
      'blockMs',
      banning.blockMs,
      `${can.name} cannot honour blockMs (rule ${JSON.stringify(banning.name)}): it keeps no bans; use a store ` +
        `with bans (memoryStore, redisStore)`,
    );
  }
}

/** A store's name in errors: its factory's, as its capabilities declare it, else its class's. */
export function storeNameOf(store: Store): string {
  return store.capabilities?.name ?? store.constructor?.name ?? 'this store';
}

/**
 * A store's optional control, or SluiceError('UNSUPPORTED') naming the control, and the store when it declares
 * what it cannot do (a ban must hold fleet-wide at every decision, which a leased or divided store decides
 * without asking Redis).
 */
export function storeControl<F extends (...args: never[]) => unknown>(
  fn: F | undefined,
  name: string,
  store: Store,
): F {
  if (typeof fn === 'function') return fn;
  const can = store.capabilities;
  if (can !== undefined && !can.bans && (name === 'block' || name === 'unblock'))
    throw new SluiceError(
      'UNSUPPORTED',
      `${name}: ${can.name} keeps no bans (a ban must hold on every node at every decision, which ${can.name} ` +
        `decides without asking Redis); use a store with bans (memoryStore, redisStore)`,
    );
  throw new SluiceError('UNSUPPORTED', `${name}: this limiter's store does not implement ${name}()`);
}
