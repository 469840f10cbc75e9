/**
 * The checks of every engine method's input: a caller's mistake is a typed error before anything changes,
 * whichever engine is called (the memory engine here; a backend's engine may use them too).
 */
import type { Algorithm } from '../algorithms/algorithm.js';
import { SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import {
  describe,
  nonNegativeFinite,
  nonNegativeInteger,
  nonNegativeOrInfinite,
  positiveFinite,
  positiveInteger,
} from '../foundation/validate.js';
import { normalizeRules } from '../engine/policy.js';
import { adjustPermits, checkPermitNames, permitsOption } from '../engine/rule-permits.js';
import { CARRY_MODES, type CarryMode } from '../algorithms/carry.js';
import type {
  Adjustment,
  CarryLinks,
  ConfigRecord,
  EngineAsk,
  EngineRules,
  EngineTime,
  Heartbeat,
  LeaseAsk,
} from './engine.js';

function record(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SluiceTypeError(name, value, `${name} must be an object, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

/** A string (a prefix, a key, a node id, a channel): non-empty unless `empty` allows it. */
export function stringValue(name: string, value: unknown, empty = false): string {
  if (typeof value !== 'string')
    throw new SluiceTypeError(name, value, `${name} must be a string, got ${describe(value)}`);
  if (!empty && value.length === 0) throw new SluiceRangeError(name, value, `${name} must not be empty`);
  return value;
}

function booleanOf(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw new SluiceTypeError(name, value, `${name} must be a boolean, got ${describe(value)}`);
  return value;
}

/** A call's time: undefined (the engine's clock) or a finite number of ms. */
export function engineTime(value: unknown, name = 'at'): EngineTime {
  if (value === undefined) return undefined;
  if (typeof value !== 'number')
    throw new SluiceTypeError(name, value, `${name} must be a number of ms or undefined, got ${describe(value)}`);
  if (!Number.isFinite(value))
    throw new SluiceRangeError(name, value, `${name} must be finite, got ${describe(value)}`);
  return value;
}

/** A configuration version: an integer >= 1. */
export function versionValue(name: string, value: unknown): number {
  return positiveInteger(name, value);
}

/** A limiter's rules as the engine keeps them, checked: its rules as a list, one state name per rule. */
export function engineRules(value: unknown): EngineRules & { readonly rules: readonly Algorithm[] } {
  const o = record('rules', value);
  const prefix = stringValue('rules.prefix', o.prefix);
  // A list, as EngineRules says: an engine is given the caller's object (checkedEngine), not this copy.
  if (!Array.isArray(o.rules))
    throw new SluiceTypeError(
      'rules.rules',
      o.rules,
      `rules.rules must be an array of rules, got ${describe(o.rules)}`,
    );
  const rules = normalizeRules(o.rules, 'rules.rules');
  if (!Array.isArray(o.states))
    throw new SluiceTypeError('rules.states', o.states, `rules.states must be an array, got ${describe(o.states)}`);
  if (o.states.length !== rules.length)
    throw new SluiceRangeError(
      'rules.states',
      o.states,
      `rules.states must name one state per rule (${rules.length}), got ${o.states.length}`,
    );
  const states = o.states.map((s: unknown, i: number) => stringValue(`rules.states[${i}]`, s));
  const version = o.version === undefined ? undefined : versionValue('rules.version', o.version);
  return { prefix, rules, states, version };
}

/** A decide batch's asks, each checked against the rules it is decided by. */
export function engineAsks(value: unknown, rules: readonly Algorithm[]): EngineAsk[] {
  if (!Array.isArray(value)) throw new SluiceTypeError('asks', value, `asks must be an array, got ${describe(value)}`);
  return value.map((item: unknown, i: number) => {
    const plain = plainAsk(item);
    if (plain !== undefined) return plain;
    const o = record(`asks[${i}]`, item);
    const key = stringValue(`asks[${i}].key`, o.key, true);
    if (o.permits === undefined)
      throw new SluiceTypeError(`asks[${i}].permits`, o.permits, `asks[${i}].permits must be given`);
    const permits = permitsOption(o.permits, `asks[${i}].permits`);
    checkPermitNames(permits, rules, `asks[${i}].permits`);
    const maxWaitMs = nonNegativeOrInfinite(`asks[${i}].maxWaitMs`, o.maxWaitMs);
    const peek = booleanOf(`asks[${i}].peek`, o.peek);
    const at = engineTime(o.at, `asks[${i}].at`);
    return { key, permits, maxWaitMs, peek, at };
  });
}

/**
 * The common ask (a whole number of permits, every field of its type) checked without naming each field: the
 * checks below name a fault, and building their names for every ask of every decision cost more than the
 * checks. Undefined when any field is not so: the full checks then decide, and name what is wrong.
 */
function plainAsk(item: unknown): EngineAsk | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const { key, permits, maxWaitMs, peek, at } = item as Record<string, unknown>;
  if (typeof key !== 'string' || typeof permits !== 'number' || !Number.isSafeInteger(permits) || permits < 1)
    return undefined;
  if (typeof maxWaitMs !== 'number' || !(maxWaitMs >= 0) || typeof peek !== 'boolean') return undefined;
  if (at !== undefined && (typeof at !== 'number' || !Number.isFinite(at))) return undefined;
  return { key, permits, maxWaitMs, peek, at };
}

/** An adjustment, checked against the rules it adjusts. */
export function adjustmentValue(value: unknown, rules: readonly Algorithm[]): Adjustment {
  const o = record('adjustment', value);
  switch (o.op) {
    case 'refund': {
      const permits = adjustPermits(o.permits, 'adjustment.permits');
      checkPermitNames(permits, rules, 'adjustment.permits');
      const unrefundable = rules.find((rule) => rule.scope === undefined && !rule.refundable);
      if (unrefundable !== undefined)
        throw new SluiceError(
          'UNSUPPORTED',
          `rule ${JSON.stringify(unrefundable.name)} (${unrefundable.kind}) cannot give permits back`,
        );
      if (o.grantedAtMs !== undefined) {
        if (o.grantedMsAgo !== undefined)
          throw new SluiceTypeError(
            'adjustment.grantedMsAgo',
            o.grantedMsAgo,
            'a refund names when its grant was made once: grantedAtMs or grantedMsAgo, not both',
          );
        return { op: 'refund', permits, grantedAtMs: nonNegativeFinite('adjustment.grantedAtMs', o.grantedAtMs) };
      }
      const ago = o.grantedMsAgo;
      if (typeof ago !== 'number' || !(Number.isNaN(ago) || ago >= 0))
        throw new SluiceRangeError(
          'adjustment.grantedMsAgo',
          ago,
          `adjustment.grantedMsAgo must be a number >= 0 or NaN (unknown), got ${describe(ago)}, or grantedAtMs given`,
        );
      return { op: 'refund', permits, grantedMsAgo: ago };
    }
    case 'penalize': {
      const permits = adjustPermits(o.permits, 'adjustment.permits');
      checkPermitNames(permits, rules, 'adjustment.permits');
      return { op: 'penalize', permits };
    }
    case 'block':
      return { op: 'block', ms: nonNegativeFinite('adjustment.ms', o.ms) };
    case 'reset':
    case 'unblock':
      return { op: o.op };
    case 'carry':
      return { op: 'carry', links: carryLinks(o.links, rules) };
    default:
      throw new SluiceRangeError(
        'adjustment.op',
        o.op,
        `adjustment.op must be 'refund', 'penalize', 'reset', 'block', 'unblock' or 'carry', got ${describe(o.op)}`,
      );
  }
}

/** A carry's links, checked: each names a rule of `rules` once, and its earlier generations (newest first). */
function carryLinks(value: unknown, rules: readonly Algorithm[]): CarryLinks[] {
  if (!Array.isArray(value))
    throw new SluiceTypeError('adjustment.links', value, `adjustment.links must be an array, got ${describe(value)}`);
  const named = new Set<number>();
  return value.map((item: unknown, i: number) => {
    const o = record(`adjustment.links[${i}]`, item);
    const rule = nonNegativeInteger(`adjustment.links[${i}].rule`, o.rule);
    if (rule >= rules.length || named.has(rule))
      throw new SluiceRangeError(
        `adjustment.links[${i}].rule`,
        rule,
        `adjustment.links[${i}].rule must name one of the ${rules.length} rules, each once, got ${rule}`,
      );
    named.add(rule);
    if (!Array.isArray(o.from) || o.from.length === 0)
      throw new SluiceTypeError(
        `adjustment.links[${i}].from`,
        o.from,
        `adjustment.links[${i}].from must be a non-empty array of earlier generations, got ${describe(o.from)}`,
      );
    const from = o.from.map((generation: unknown, g: number) => {
      const name = `adjustment.links[${i}].from[${g}]`;
      const f = record(name, generation);
      const [earlier] = normalizeRules([f.rule], `${name}.rule`) as [Algorithm];
      const mode = f.mode;
      if (typeof mode !== 'string' || !(CARRY_MODES as readonly string[]).includes(mode))
        throw new SluiceRangeError(
          `${name}.mode`,
          mode,
          `${name}.mode must be one of ${CARRY_MODES.map((m) => `'${m}'`).join(', ')}, got ${describe(mode)}`,
        );
      return { rule: earlier, state: stringValue(`${name}.state`, f.state), mode: mode as CarryMode };
    });
    return { rule, from };
  });
}

/** A lease ask, checked: one rule, a node, positive counts. */
export function leaseAskValue(value: unknown, rules: readonly Algorithm[]): LeaseAsk {
  if (rules.length !== 1)
    throw new SluiceRangeError('rules.rules', rules.length, `a lease takes from one rule, got ${rules.length}`);
  const rule = rules[0] as Algorithm;
  if (rule.lease === undefined)
    throw new SluiceRangeError(
      'rules.rules[0]',
      rule.kind,
      `a lease takes from a rule that can be leased, got ${rule.kind}`,
    );
  const o = record('ask', value);
  return {
    key: stringValue('ask.key', o.key, true),
    want: positiveInteger('ask.want', o.want),
    node: stringValue('ask.node', o.node),
    liveMs: positiveFinite('ask.liveMs', o.liveMs),
    hoardingDivisor:
      o.hoardingDivisor === undefined ? undefined : positiveFinite('ask.hoardingDivisor', o.hoardingDivisor),
    register: booleanOf('ask.register', o.register),
  };
}

/** A heartbeat, checked. */
export function heartbeatValue(value: unknown): Heartbeat {
  const o = record('beat', value);
  const division = o.division;
  if (division !== 'equal' && division !== 'demand')
    throw new SluiceRangeError(
      'beat.division',
      division,
      `beat.division must be 'equal' or 'demand', got ${describe(division)}`,
    );
  const divided = positiveFinite('beat.divided', o.divided);
  if (divided > 1)
    throw new SluiceRangeError('beat.divided', divided, `beat.divided must be at most 1, got ${divided}`);
  return {
    prefix: stringValue('beat.prefix', o.prefix),
    fleet: stringValue('beat.fleet', o.fleet),
    node: stringValue('beat.node', o.node),
    leaving: booleanOf('beat.leaving', o.leaving),
    liveMs: positiveFinite('beat.liveMs', o.liveMs),
    intervalMs: positiveFinite('beat.intervalMs', o.intervalMs),
    limit: positiveFinite('beat.limit', o.limit),
    burst: positiveFinite('beat.burst', o.burst),
    demand: nonNegativeFinite('beat.demand', o.demand),
    division,
    divided,
    windowed: booleanOf('beat.windowed', o.windowed),
    minLocal: nonNegativeInteger('beat.minLocal', o.minLocal),
    lastAt: o.lastAt === undefined ? undefined : engineTime(o.lastAt),
    knownNodes: nonNegativeInteger('beat.knownNodes', o.knownNodes),
    assumedNodes: positiveInteger('beat.assumedNodes', o.assumedNodes),
    version: versionValue('beat.version', o.version),
  };
}

/** A configuration record, checked. */
export function configRecordValue(value: unknown): ConfigRecord {
  const o = record('record', value);
  return { version: versionValue('record.version', o.version), text: stringValue('record.text', o.text, true) };
}

/** A subscriber's listener. */
export function listenerValue(value: unknown): (message: string) => void {
  if (typeof value !== 'function')
    throw new SluiceTypeError('listener', value, `listener must be a function, got ${describe(value)}`);
  return value as (message: string) => void;
}
