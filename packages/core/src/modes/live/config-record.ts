import type { Algorithm } from '../../algorithms/algorithm.js';
import { CARRY_MODES, type CarryMode, carryWindowMs } from '../../algorithms/carry.js';
import { stateName } from '../../algorithms/rule-name.js';
import { ruleFromSpec, ruleSpec } from '../../algorithms/rule-spec.js';
import { SluiceError, SluiceRangeError } from '../../foundation/errors.js';

/**
 * The name a rule's states are kept under in a configuration generation (`generation`: `g3` for the rules of
 * version 3, `o7` for an override set at version 7; undefined for the rules a limiter was created with, whose
 * states keep their first names): the name with the generation after a character no rule name holds, so that
 * states kept under other parameters are never read as this generation's.
 * @example
 * generationName('per-minute', 'g3') // 'per-minute\u0002g3'
 */
export function generationName(name: string, generation: string | undefined): string {
  return generation === undefined ? name : `${name}\u0002${generation}`;
}

/**
 * The format of a stored configuration (configKey): a later sluice that changes what the record holds
 * raises it, and this one refuses to decide under a record it cannot read rather than misread it.
 */
export const CONFIG_FORMAT = 1;

/**
 * The most earlier generations a rule carries states from: a rule changed again while an earlier change's
 * carry window is open carries from both. A generation is never dropped while it can still matter (a key idle
 * through every change since would start fresh): a change that would need more is refused (UNSUPPORTED,
 * naming when the oldest stops mattering). Each is one more key read on a key's first touch after a change.
 */
export const MAX_LINKS = 32;

/**
 * The most keys one limiter's record holds on Redis: overrides in force, and removed ones whose states are
 * still carried back (every node reads them all with the configuration, after each change: about 400 bytes
 * each). A new override past it is refused (SluiceRangeError), never one carried back dropped.
 */
export const MAX_OVERRIDES = 10_000;

/**
 * The most rules of one override: a key's decision runs all of them in one script call, which holds Redis for
 * every other key meanwhile (30,000 rules held it 164 ms).
 */
export const MAX_OVERRIDE_RULES = 16;

/**
 * How long past its carry window an earlier generation is still read: nodes' clocks differ, and reading one
 * more key on a miss for a minute more costs little.
 */
const CARRY_SLACK_MS = 60_000;

/** Earlier states of a rule that a key's first touch still carries to the rule's current states, and how. */
export interface CarryLink {
  readonly rule: Algorithm;
  /** The state name they live under (see generationName). */
  readonly state: string;
  /** The carry mode of the change from them. */
  readonly mode: CarryMode;
  /** Until when (ms, the writer's clock plus slack) they are carried on first touch. */
  readonly until: number;
}

/** One rule of a configuration: the name its states live under, and the earlier states carried from. */
export interface LiveRule {
  readonly rule: Algorithm;
  readonly state: string;
  /** Newest first. */
  readonly from: readonly CarryLink[];
}

/** A limiter's configuration as every node of its prefix decides under it. */
export interface LiveConfig {
  readonly version: number;
  /** The limiter's rules. */
  readonly rules: readonly LiveRule[];
  /** Keys with rules of their own (limiter.override). */
  readonly overrides: ReadonlyMap<string, readonly LiveRule[]>;
  /**
   * Keys whose override was removed, by rule name: the override's states, carried back to the limiter's
   * rules on the key's first touch (newest first).
   */
  readonly returning: ReadonlyMap<string, Readonly<Record<string, readonly CarryLink[]>>>;
}

/**
 * The configuration a limiter is created with, before any change: version 1, every rule in its first keys.
 * @example
 * firstConfig([tokenBucket({ name: 'api', capacity: 100, refillPerSecond: 10 })]).version // 1
 */
export function firstConfig(rules: readonly Algorithm[]): LiveConfig {
  return {
    version: 1,
    rules: rules.map((rule) => ({ rule, state: stateName(rule), from: [] })),
    overrides: new Map(),
    returning: new Map(),
  };
}

/** Whether two rules keep their states alike: the same algorithm with the same parameters. */
function sameState(a: Algorithm, b: Algorithm): boolean {
  return (
    a.kind === b.kind &&
    a.wireParams.length === b.wireParams.length &&
    a.wireParams.every((v, i) => v === b.wireParams[i])
  );
}

const open = (links: readonly CarryLink[], nowMs: number) => links.filter((link) => link.until > nowMs);

/** A link from `entry`'s states, carried by `mode` from `nowMs` while they can matter. */
function linkFrom(entry: LiveRule, mode: CarryMode, nowMs: number): CarryLink {
  return { rule: entry.rule, state: entry.state, mode, until: nowMs + carryWindowMs([entry.rule]) + CARRY_SLACK_MS };
}

/**
 * `rules` as the rules of generation `generation` following `before` (the rules a key was decided by): a rule
 * whose state parameters are unchanged keeps its states; a changed one takes the generation's name and carries
 * from the states before (by `carry`) and from those they still carry from; a new name starts fresh.
 */
function follow(
  before: readonly LiveRule[],
  rules: readonly Algorithm[],
  generation: string,
  carry: CarryMode,
  nowMs: number,
  keepUnchanged: boolean,
): LiveRule[] {
  const byName = new Map(before.map((entry) => [entry.rule.name, entry]));
  return rules.map((rule) => {
    const state = generationName(stateName(rule), generation);
    const was = byName.get(rule.name);
    // A rule counted against another identity now (a scope set or dropped) starts fresh: its earlier states
    // are another identity's (a global count is every key's, not the first key's to touch it).
    if (was === undefined || was.rule.scope !== rule.scope) return { rule, state, from: [] };
    if (keepUnchanged && sameState(was.rule, rule)) return { rule, state: was.state, from: open(was.from, nowMs) };
    return { rule, state, from: boundedLinks(rule.name, [linkFrom(was, carry, nowMs), ...open(was.from, nowMs)]) };
  });
}

/** `links` (newest first), refused when they are more than MAX_LINKS: none is dropped while it can matter. */
function boundedLinks(name: string, links: CarryLink[]): CarryLink[] {
  if (links.length <= MAX_LINKS) return links;
  const oldest = Math.min(...links.map((link) => link.until));
  throw new SluiceError(
    'UNSUPPORTED',
    `rule ${JSON.stringify(name)} would carry from ${links.length} earlier generations, at most ${MAX_LINKS} on ` +
      'Redis (it changed that often within its carry window: a key idle through every change must still carry ' +
      `what it used); the oldest stops mattering at ${new Date(oldest).toISOString()}: change it again after ` +
      'that. Nothing was changed',
  );
}

/** `config` with its carry links past their windows dropped (they carry nothing any more). */
function pruned(
  config: LiveConfig,
  nowMs: number,
): {
  overrides: Map<string, readonly LiveRule[]>;
  returning: Map<string, Readonly<Record<string, readonly CarryLink[]>>>;
} {
  const overrides = new Map(
    [...config.overrides].map(([key, rules]) => [key, rules.map((e) => ({ ...e, from: open(e.from, nowMs) }))]),
  );
  const returning = new Map<string, Readonly<Record<string, readonly CarryLink[]>>>();
  for (const [key, byName] of config.returning) {
    const kept = Object.fromEntries(
      Object.entries(byName)
        .map(([name, links]) => [name, open(links, nowMs)] as const)
        .filter(([, links]) => links.length > 0),
    );
    if (Object.keys(kept).length > 0) returning.set(key, kept);
  }
  return { overrides, returning };
}

/**
 * The configuration after `current` changes its rules to `rules` at `nowMs` as version `version`: a changed
 * rule's states move to a name of the new generation, carried from the old by `carry` on first touch.
 * @example
 * const next = reconfigured(firstConfig(rules), newRules, 'used', 2, Date.now()) // next.version === 2
 */
export function reconfigured(
  current: LiveConfig,
  rules: readonly Algorithm[],
  carry: CarryMode,
  version: number,
  nowMs: number,
): LiveConfig {
  return { version, rules: follow(current.rules, rules, `g${version}`, carry, nowMs, true), ...pruned(current, nowMs) };
}

/**
 * The rules `key` is decided by under `config`, each with every earlier state its first touch carries from:
 * its override's, or the limiter's with what a removed override left.
 * @example
 * rulesOf(config, 'user:1').map((entry) => entry.state) // the state names its decisions use
 */
export function rulesOf(config: LiveConfig, key: string): readonly LiveRule[] {
  const own = config.overrides.get(key);
  if (own !== undefined) return own;
  const back = config.returning.get(key);
  if (back === undefined) return config.rules;
  return config.rules.map((e) => ({ ...e, from: [...(back[e.rule.name] ?? []), ...e.from] }));
}

/**
 * The configuration after `key` is given `rules` of its own at `nowMs` as version `version`.
 * @example
 * const next = overridden(config, 'user:1', [tokenBucket({ name: 'api', capacity: 500, refillPerSecond: 50 })], 3, Date.now())
 */
export function overridden(
  current: LiveConfig,
  key: string,
  rules: readonly Algorithm[],
  version: number,
  nowMs: number,
): LiveConfig {
  if (rules.length > MAX_OVERRIDE_RULES) {
    throw new SluiceRangeError(
      'rules',
      rules.length,
      `an override holds at most ${MAX_OVERRIDE_RULES} rules (a key's decision runs them all in one atomic ` +
        'call, holding the engine (a Redis script) for every other key meanwhile)',
    );
  }
  const { overrides, returning } = pruned(current, nowMs);
  const held = overrides.size + returning.size - (overrides.has(key) || returning.has(key) ? 1 : 0);
  if (held >= MAX_OVERRIDES) {
    throw new SluiceRangeError(
      'key',
      key,
      `a limiter holds at most ${MAX_OVERRIDES} overrides, counting removed ones whose keys still carry ` +
        `what they used back (${overrides.size} in force, ${returning.size} removed): every node reads them all; ` +
        'remove one first, wait for removed ones to stop mattering, or give such keys a plan',
    );
  }
  overrides.set(key, follow(rulesOf(current, key), rules, `o${version}`, 'used', nowMs, false));
  returning.delete(key);
  return { version, rules: current.rules, overrides, returning };
}

/**
 * The configuration after `key`'s override is removed (what it used carried back) as version `version`.
 * @example
 * const next = withoutOverride(config, 'user:1', 4, Date.now()) // next.overrides.has('user:1') === false
 */
export function withoutOverride(current: LiveConfig, key: string, version: number, nowMs: number): LiveConfig {
  const own = current.overrides.get(key);
  const { overrides, returning } = pruned(current, nowMs);
  if (own === undefined) return { version, rules: current.rules, overrides, returning };
  overrides.delete(key);
  returning.set(
    key,
    Object.fromEntries(
      own.map((e) => [e.rule.name, boundedLinks(e.rule.name, [linkFrom(e, 'used', nowMs), ...open(e.from, nowMs)])]),
    ),
  );
  return { version, rules: current.rules, overrides, returning };
}

interface StoredLink {
  readonly spec: unknown;
  readonly state: string;
  readonly mode: unknown;
  readonly until: number;
}
interface StoredRule {
  readonly spec: unknown;
  readonly state: string;
  readonly from: readonly StoredLink[];
}

const storeLink = (link: CarryLink): StoredLink => ({
  spec: ruleSpec(link.rule),
  state: link.state,
  mode: link.mode,
  until: link.until,
});
const storeRules = (rules: readonly LiveRule[]): StoredRule[] =>
  rules.map((e) => ({ spec: ruleSpec(e.rule), state: e.state, from: e.from.map(storeLink) }));

/**
 * A configuration as its record: '<version>\n<JSON>' (an engine stores the version and the JSON apart; Redis
 * keeps this text, and config_write.lua compares the version at its head).
 * @example
 * encodeConfig(firstConfig(rules)) // '1\n{"format":1,...}'
 */
export function encodeConfig(config: LiveConfig): string {
  const body = {
    format: CONFIG_FORMAT,
    rules: storeRules(config.rules),
    overrides: Object.fromEntries([...config.overrides].map(([key, rules]) => [key, storeRules(rules)])),
    returning: Object.fromEntries(
      [...config.returning].map(([key, byName]) => [
        key,
        Object.fromEntries(Object.entries(byName).map(([name, links]) => [name, links.map(storeLink)])),
      ]),
    ),
  };
  return `${config.version}\n${JSON.stringify(body)}`;
}

/**
 * The configuration a record holds. A record of a later format is refused (SluiceError 'UNSUPPORTED' naming
 * its format), as is one that is not a record sluice wrote (SluiceError 'STORE_MISCONFIGURED').
 * @example
 * decodeConfig(encodeConfig(config), 'the record of "api"').version === config.version // true
 */
export function decodeConfig(record: string, where: string): LiveConfig {
  const unreadable = (why: string) =>
    new SluiceError('STORE_MISCONFIGURED', `the configuration stored at ${where} is not one sluice wrote: ${why}`);
  const newline = record.indexOf('\n');
  const version = Number(record.slice(0, newline));
  if (newline === -1 || !Number.isSafeInteger(version) || version < 1) throw unreadable('no version');
  let body: { format?: unknown; rules?: unknown; overrides?: unknown; returning?: unknown };
  try {
    body = JSON.parse(record.slice(newline + 1)) as typeof body;
  } catch (error) {
    throw unreadable(String(error));
  }
  if (typeof body.format !== 'number' || body.format > CONFIG_FORMAT) {
    throw new SluiceError(
      'UNSUPPORTED',
      `the configuration stored at ${where} (version ${version}) has format ${String(body.format)}, written by a ` +
        `later sluice; this one reads format ${CONFIG_FORMAT}: upgrade this node`,
    );
  }
  try {
    const rules = readRules(body.rules);
    if (rules.length === 0) throw new Error('no rules');
    const overrides = new Map(Object.entries(objectOf(body.overrides)).map(([key, r]) => [key, readRules(r)] as const));
    const returning = new Map(
      Object.entries(objectOf(body.returning)).map(
        ([key, byName]) =>
          [
            key,
            Object.fromEntries(Object.entries(objectOf(byName)).map(([name, links]) => [name, readLinks(links)])),
          ] as const,
      ),
    );
    return { version, rules, overrides, returning };
  } catch (error) {
    throw unreadable(error instanceof Error ? error.message : String(error));
  }
}

function objectOf(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
  return value as Record<string, unknown>;
}

/** Each item of the list `value` read by `read` (a stored rule or link: its rule and state name first). */
function listOf<T>(value: unknown, what: string, read: (item: StoredLink & StoredRule) => T): T[] {
  if (!Array.isArray(value)) throw new Error(`${what} are not a list`);
  return value.map(read);
}

function readRules(value: unknown): LiveRule[] {
  return listOf(value, 'rules', (e) => ({
    rule: ruleFromSpec(e.spec),
    state: stateNameOf(e.state),
    from: readLinks(e.from),
  }));
}

function readLinks(value: unknown): CarryLink[] {
  return listOf(value, 'links', (e) => ({
    rule: ruleFromSpec(e.spec),
    state: stateNameOf(e.state),
    mode: modeOf(e.mode),
    until: Number(e.until),
  }));
}

function stateNameOf(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new Error(`state name ${String(value)}`);
  return value;
}

function modeOf(value: unknown): CarryMode {
  if (!CARRY_MODES.includes(value as CarryMode)) throw new Error(`carry mode ${String(value)}`);
  return value as CarryMode;
}
