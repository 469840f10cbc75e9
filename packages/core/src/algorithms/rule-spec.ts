import { SluiceError, SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';
import type { Algorithm, AlgorithmKind } from './algorithm.js';
import { calendarWindow } from './calendar-window.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { smoothBursty, smoothWarmingUp } from './smooth.js';
import { tokenBucket } from './token-bucket.js';

/**
 * A rule as data: what a store that keeps a limiter's rules for every node (limiter.reconfigure on Redis)
 * writes, and what rebuilds the same rule on another node. `params` are the algorithm's own (its factory's
 * options, validated again when the rule is rebuilt); `named` says the rule was given its name (an unnamed
 * rule's name is derived from its parameters again).
 */
export interface RuleSpec {
  readonly kind: AlgorithmKind;
  readonly name: string;
  readonly named: boolean;
  readonly blockMs: number;
  /** A rule counted against one fixed key (`key: 'global'`); a key function cannot be written down. */
  readonly key?: string;
  readonly params: Readonly<Record<string, number | string>>;
}

/** Each algorithm's factory, by kind (each takes its algorithm's params as its options). */
export const RULE_FACTORIES: Readonly<Record<AlgorithmKind, (options: never) => Algorithm>> = {
  fixedWindow,
  calendarWindow,
  slidingWindowLog,
  slidingWindowCounter,
  tokenBucket,
  leakyBucket,
  gcra,
  smoothBursty,
  smoothWarmingUp,
};

/**
 * `rule` as data (see RuleSpec). A rule whose `key` is a function cannot be written down: SluiceError
 * 'UNSUPPORTED' naming the rule.
 * @example
 * ruleSpec(tokenBucket({ name: 'api', capacity: 10, refillPerSecond: 1 })) // { kind: 'tokenBucket', name: 'api', ... }
 */
export function ruleSpec(rule: Algorithm): RuleSpec {
  if (typeof rule.key === 'function') {
    throw new SluiceError(
      'UNSUPPORTED',
      `rule ${JSON.stringify(rule.name)} counts against a key function, which cannot be stored for other nodes: ` +
        'give it a fixed key, or keep it out of rules changed at run time',
    );
  }
  return {
    kind: rule.kind,
    name: rule.name,
    named: rule.planName === undefined,
    blockMs: rule.blockMs,
    ...(rule.key === undefined ? {} : { key: rule.key }),
    params: { ...rule.params },
  };
}

/**
 * The rule `spec` describes (see RuleSpec), validated as its factory validates options: a spec that is no
 * rule is a SluiceTypeError naming what is wrong.
 * @example
 * ruleFromSpec(ruleSpec(rule)).wireParams // rule.wireParams
 */
export function ruleFromSpec(spec: unknown): Algorithm {
  if (typeof spec !== 'object' || spec === null)
    throw new SluiceTypeError('rule', spec, `a rule spec must be an object, got ${describe(spec)}`);
  const s = spec as Partial<RuleSpec>;
  const factory =
    typeof s.kind === 'string' && Object.hasOwn(RULE_FACTORIES, s.kind) ? RULE_FACTORIES[s.kind] : undefined;
  if (factory === undefined)
    throw new SluiceTypeError('kind', s.kind, `a rule spec's kind must be an algorithm, got ${describe(s.kind)}`);
  if (typeof s.params !== 'object' || s.params === null) {
    throw new SluiceTypeError('params', s.params, `a rule spec's params must be an object, got ${describe(s.params)}`);
  }
  const options = {
    ...s.params,
    ...(s.named === true ? { name: s.name } : {}),
    ...(s.blockMs === undefined || s.blockMs === 0 ? {} : { blockMs: s.blockMs }),
    ...(s.key === undefined ? {} : { key: s.key }),
  };
  return factory(options as never);
}
