import type { Algorithm } from '../algorithms/algorithm.js';
import { SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { type Rules, normalizeRules } from './policy.js';
import { describe } from '../foundation/validate.js';

/**
 * Picks a key's plan when a call names none (`tryAcquire(key, { plan })` wins over it). It may be async (a
 * lookup of the customer's tier) and must return one of the limiter's plan names.
 */
export type PlanResolver = (key: string) => string | Promise<string>;

/** A limiter's plans, checked: each plan's rules under the names they keep state by. */
export interface ParsedPlans {
  /** Plan names in the order given; the first is the default. */
  readonly names: readonly string[];
  readonly rules: ReadonlyMap<string, readonly Algorithm[]>;
  /** Every rule of every plan, in plan order: what the limiter's prefix is claimed for in a store. */
  readonly catalog: readonly Algorithm[];
}

const PLAN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * `rule` named `name` wherever it goes, scaled shares included (a store's fail mode holds a share of a plan's
 * rules, and must find them under the same names).
 */
function withName(rule: Algorithm, name: string): Algorithm {
  return { ...rule, name, planName: undefined, share: (fraction) => withName(rule.share(fraction), name) };
}

/**
 * Checks `createLimiter`'s `plans`. A rule given no name takes its plan name (its kind and period, see
 * Algorithm.planName), so one unnamed rule of a shape in each plan shares state across them. Rules of one
 * name in different plans must keep state the same way (Algorithm.stateFormat): a key that changes plan
 * then keeps its usage, capped by the new plan's limits.
 */
export function parsePlans(value: unknown): ParsedPlans {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceTypeError(
      'plans',
      value,
      `plans must be an object of plan name to rules ({ free: [...], pro: [...] }), got ${describe(value)}`,
    );
  }
  const names = Object.keys(value);
  if (names.length === 0) throw new SluiceRangeError('plans', value, 'plans must name at least one plan, got {}');
  const rules = new Map<string, readonly Algorithm[]>();
  const byName = new Map<string, { plan: string; rule: Algorithm }>();
  for (const plan of names) {
    if (!PLAN_NAME.test(plan))
      throw new SluiceRangeError('plans', plan, `plan names must be 1-64 of [A-Za-z0-9_.-], got ${describe(plan)}`);
    const option = `plans.${plan}`;
    const named = normalizeRules((value as Record<string, Rules>)[plan], option).map((rule) =>
      rule.planName === undefined ? rule : withName(rule, rule.planName),
    );
    const seen = new Set<string>();
    for (const rule of named) {
      if (seen.has(rule.name)) {
        throw new SluiceRangeError(
          option,
          rule.name,
          `${option} has two rules named ${JSON.stringify(rule.name)} (unnamed rules in plans are named by kind ` +
            `and period); give them names`,
        );
      }
      seen.add(rule.name);
      const other = byName.get(rule.name);
      if (other !== undefined && other.rule.stateFormat !== rule.stateFormat) {
        throw new SluiceRangeError(
          option,
          rule.name,
          `rules named ${JSON.stringify(rule.name)} share state across plans, so they must keep it the same way: ` +
            `${other.rule.stateFormat} in plan ${JSON.stringify(other.plan)}, ${rule.stateFormat} in plan ` +
            `${JSON.stringify(plan)}; give them different names`,
        );
      }
      if (other === undefined) byName.set(rule.name, { plan, rule });
    }
    rules.set(plan, named);
  }
  return { names, rules, catalog: [...rules.values()].flat() };
}

/** A plan name a call or resolver gave, checked against the limiter's plans. */
export function knownPlan(plans: ParsedPlans, value: unknown): string {
  if (typeof value === 'string' && plans.rules.has(value)) return value;
  const known = plans.names.map((name) => JSON.stringify(name)).join(', ');
  if (typeof value !== 'string')
    throw new SluiceTypeError('plan', value, `plan must be one of ${known}, got ${describe(value)}`);
  throw new SluiceRangeError('plan', value, `plan must be one of ${known}, got ${describe(value)}`);
}
