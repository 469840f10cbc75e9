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
 *
 * A spec is a stored format (a configuration record on Redis, which two versions of sluice read during a
 * rolling deploy), so its names stay as they were first written where an option was renamed since: `key`
 * is the rule's `scope`, and STORED_PARAM_NAMES maps renamed parameters.
 */
export interface RuleSpec {
  readonly kind: AlgorithmKind;
  readonly name: string;
  readonly named: boolean;
  readonly blockMs: number;
  /**
   * The rule's `scope` when it is one fixed key (`scope: 'global'`); a scope function cannot be written down.
   * Stored under its earlier option name, `key`.
   */
  readonly key?: string;
  readonly params: Readonly<Record<string, number | string>>;
}

/**
 * The options whose name in a stored spec's params is not the option's own, by kind: option name to stored
 * name (gcra's `permitsPerSecond` was `rate`, tokenBucket's `initialPermits` was `initial`). A spec is written
 * with the stored names, so a node of an earlier version reads it; it is read with either.
 */
const STORED_PARAM_NAMES: Readonly<Partial<Record<AlgorithmKind, Readonly<Record<string, string>>>>> = {
  gcra: { permitsPerSecond: 'rate' },
  tokenBucket: { initialPermits: 'initial' },
};

/** `params` with each name `names` maps renamed (`from` to `to`): the others as they are. */
function renamed(
  params: Readonly<Record<string, number | string>>,
  names: Readonly<Record<string, string>> | undefined,
  direction: 'store' | 'read',
): Record<string, number | string> {
  const out: Record<string, number | string> = { ...params };
  for (const [option, stored] of Object.entries(names ?? {})) {
    const [from, to] = direction === 'store' ? [option, stored] : [stored, option];
    if (!Object.hasOwn(out, from)) continue;
    if (Object.hasOwn(out, to)) {
      throw new SluiceTypeError(to, out[to], `a rule spec's params give ${from} and ${to}, two names of one parameter`);
    }
    out[to] = out[from] as number | string;
    delete out[from];
  }
  return out;
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
 * `rule` as data (see RuleSpec). A rule whose `scope` is a function cannot be written down: SluiceError
 * 'UNSUPPORTED' naming the rule.
 * @example
 * ruleSpec(tokenBucket({ name: 'api', capacity: 10, refillPerSecond: 1 })) // { kind: 'tokenBucket', name: 'api', ... }
 */
export function ruleSpec(rule: Algorithm): RuleSpec {
  if (typeof rule.scope === 'function') {
    throw new SluiceError(
      'UNSUPPORTED',
      `rule ${JSON.stringify(rule.name)} counts against a scope function, which cannot be stored for other nodes: ` +
        'give it a fixed scope, or keep it out of rules changed at run time',
    );
  }
  return {
    kind: rule.kind,
    name: rule.name,
    named: rule.planName === undefined,
    blockMs: rule.blockMs,
    ...(rule.scope === undefined ? {} : { key: rule.scope }),
    params: renamed(rule.params, STORED_PARAM_NAMES[rule.kind], 'store'),
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
    ...renamed(s.params, STORED_PARAM_NAMES[s.kind as AlgorithmKind], 'read'),
    ...(s.named === true ? { name: s.name } : {}),
    ...(s.blockMs === undefined || s.blockMs === 0 ? {} : { blockMs: s.blockMs }),
    ...(s.key === undefined ? {} : { scope: s.key }),
  };
  return factory(options as never);
}
