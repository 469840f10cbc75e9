import type { Algorithm } from '../algorithms/algorithm.js';
import { type Clock, clockValue } from '../foundation/clock.js';
import { SluiceTypeError } from '../foundation/errors.js';
import { type SchemaOf, booleanValue, functionValue, option, optional } from '../foundation/options.js';
import {
  DEFAULT_MAX_KEY_LENGTH,
  DEFAULT_PREFIX,
  describe,
  nonNegativeFinite,
  positiveInteger,
  prefixValue,
} from '../foundation/validate.js';
import { type LimitedKeysOptions, limitedKeysValue } from './limited-keys.js';
import { type AccessListOptions, accessListValue } from './access-list.js';
import { type ParsedPlans, type PlanResolver, parsePlans } from './plans.js';
import { type Rules, normalizeRules } from './policy.js';
import type { Store } from './store.js';

/** Options every limiter takes, beside its rules (`rules`) or its plans (`plans`). */
export interface CommonLimiterOptions {
  /**
   * Where state lives.
   * @default a private memoryStore({ clock })
   */
  store?: Store | undefined;
  /**
   * Namespace of this limiter's keys in a shared store: letters, digits and `_ . - : /`, at most 100.
   * @default 'sluice'
   */
  prefix?: string | undefined;
  /**
   * Time for waiting (and, with the default store, for decisions).
   * @default the store's clock if it has one, else systemClock
   */
  clock?: Clock | undefined;
  /**
   * Longest key accepted; longer keys are refused with a SluiceRangeError.
   * @default 512
   */
  maxKeyLength?: number | undefined;
  /**
   * Up to this many ms are added at random to each retry sleep, so waiting callers on many nodes do not
   * all retry in the same instant. Never pushes a retry past the caller's deadline.
   * @default 2
   */
  retryJitterMs?: number | undefined;
  /**
   * A dry run before enforcing (Envoy's shadow mode): every request is allowed; one the rules would have
   * denied comes back with `shadowed: true` and the denial's numbers, and consumes nothing, exactly like a
   * denial. Nothing waits in shadow mode: a request is decided at once (a `maxWaitMs` is not waited out), so
   * turning it on never adds latency. HTTP adapters send the headers they would have sent, never a 429.
   * @default false
   */
  shadow?: boolean | undefined;
  /**
   * What the limiter remembers of the keys it limits, for `topLimited`: a fixed-memory sketch of the keys it
   * denies and of those it grants near their limit (see LimitedKeysOptions). false keeps none.
   * @default { capacity: 64, nearLimit: 0.2, clearKeys: false,
   * flushMs: 5000 }
   */
  limitedKeys?: LimitedKeysOptions | false | undefined;
  /**
   * The limiter's allow and deny lists (`limiter.allow`, `limiter.deny`, the admin router, the CLI): how
   * often a shared store's list is read again. Addresses and ranges match the client address a call gives
   * (`tryAcquire(key, { address })`, passed by the adapters), never the key. false keeps none (and makes
   * allow and deny fail with UNSUPPORTED).
   * @default { refreshMs: 10000 }
   */
  accessList?: AccessListOptions | false | undefined;
}

/** A limiter of one set of rules. */
export interface RulesLimiterOptions extends CommonLimiterOptions {
  /** One rule, or a policy: a list of rules that must all allow (a denial consumes from none). */
  rules: Rules;
  plans?: undefined;
  plan?: undefined;
}

/**
 * A limiter whose rules depend on the key's plan (free, pro, ...). Rules of one name share state across
 * plans, so a key that changes plan keeps its usage: a window's count carries over, a bucket's tokens are
 * capped at the new capacity. A rule given no name is named by its kind and period (`fw-1m`, `tb`; see
 * Algorithm.planName), so one unnamed rule of a shape per plan needs no name.
 */
export interface PlansLimiterOptions extends CommonLimiterOptions {
  /** Plan name to its rules (one rule or a policy). The first plan is the default. */
  plans: Readonly<Record<string, Rules>>;
  /**
   * The plan of a key when a call names none.
   * @default the first plan
   */
  plan?: PlanResolver;
  rules?: undefined;
}

/** Options of `createLimiter`: `rules` or `plans`, and the common options. */
export type LimiterOptions = RulesLimiterOptions | PlansLimiterOptions;

/** The most ms added at random to a waiting caller's retry unless a limiter sets `retryJitterMs`. */
export const DEFAULT_RETRY_JITTER_MS = 2;

/** A `store` option: a sluice Store (anything with a bind function). */
function storeValue(name: string, value: unknown): Store {
  if (typeof value !== 'object' || value === null || typeof (value as Partial<Store>).bind !== 'function') {
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be a sluice Store such as memoryStore(), got ${describe(value)}`,
    );
  }
  return value as Store;
}

/** createLimiter's options: each checked, with its default (see parseOptions); documented on LimiterOptions. */
export const LIMITER_OPTIONS = {
  rules: optional<readonly Algorithm[]>((name, value) => normalizeRules(value, name)),
  plans: optional<ParsedPlans>((_name, value) => parsePlans(value)),
  plan: optional<PlanResolver>(functionValue),
  store: optional(storeValue),
  prefix: option(prefixValue, DEFAULT_PREFIX),
  clock: optional<Clock>(clockValue),
  maxKeyLength: option(positiveInteger, DEFAULT_MAX_KEY_LENGTH),
  retryJitterMs: option(nonNegativeFinite, DEFAULT_RETRY_JITTER_MS),
  shadow: option(booleanValue, false),
  limitedKeys: option(limitedKeysValue, limitedKeysValue('limitedKeys', {})),
  accessList: option(accessListValue, accessListValue('accessList', {})),
} as const satisfies SchemaOf<LimiterOptions, 'rules' | 'plans' | 'limitedKeys' | 'accessList'>;
