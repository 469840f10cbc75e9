import { type Algorithm, type CarryMode, CARRY_MODES, SluiceError } from '@sluice/core';
import { carryWindowMs, ruleFromSpec, ruleSpec } from '@sluice/core/store-kit';

/**
 * The format of a stored configuration (configKey): a later sluice that changes what the record holds
 * raises it, and this one refuses to decide under a record it cannot read rather than misread it.
 */
export const CONFIG_FORMAT = 1;

/**
 * The most earlier generations a changed rule carries states from: a rule changed again while an earlier
 * change's carry window is open carries from both, up to this many; a key untouched through more changes
 * within one window starts fresh.
 */
const MAX_LINKS = 4;

/**
 * How long past its carry window an earlier generation is still read: nodes' clocks differ, and reading one
 * more key on a miss for a minute more costs little.
 */
const CARRY_SLACK_MS = 60_000;

/** An earlier generation of a rule that a key's states are still carried from, and how. */
export interface CarryLink {
  readonly rule: Algorithm;
  readonly generation: number;
  /** The carry mode of the change from this generation to the next. */
  readonly mode: CarryMode;
  /** Until when (ms, the writer's clock plus slack) its states are carried on first touch. */
  readonly until: number;
}

/** One rule of a configuration: the generation its states live under, and the earlier ones carried from. */
export interface LiveRule {
  readonly rule: Algorithm;
  /** The configuration version its parameters last changed at (1: never changed, its first keys). */
  readonly generation: number;
  /** Newest first. */
  readonly from: readonly CarryLink[];
}

/** A limiter's configuration as every node of its prefix decides under it. */
export interface LiveConfig {
  readonly version: number;
  readonly rules: readonly LiveRule[];
}

/** The configuration a limiter is created with, before any change: version 1, every rule in its first keys. */
export function firstConfig(rules: readonly Algorithm[]): LiveConfig {
  return { version: 1, rules: rules.map((rule) => ({ rule, generation: 1, from: [] })) };
}

/** Whether two rules keep their states alike: the same algorithm with the same parameters. */
function sameState(a: Algorithm, b: Algorithm): boolean {
  return (
    a.kind === b.kind &&
    a.wireParams.length === b.wireParams.length &&
    a.wireParams.every((v, i) => v === b.wireParams[i])
  );
}

/**
 * The configuration after `current` changes to `rules` at `nowMs` as version `version`: a rule whose state
 * parameters are unchanged keeps its generation; a changed one starts the new generation and carries from
 * the one before (by `carry`) and from those still carried from; a new name starts fresh.
 */
export function nextConfig(
  current: LiveConfig,
  rules: readonly Algorithm[],
  carry: CarryMode,
  version: number,
  nowMs: number,
): LiveConfig {
  const byName = new Map(current.rules.map((entry) => [entry.rule.name, entry]));
  const open = (links: readonly CarryLink[]) => links.filter((link) => link.until > nowMs);
  return {
    version,
    rules: rules.map((rule) => {
      const before = byName.get(rule.name);
      if (before === undefined) return { rule, generation: version, from: [] };
      if (sameState(before.rule, rule)) return { rule, generation: before.generation, from: open(before.from) };
      const link: CarryLink = {
        rule: before.rule,
        generation: before.generation,
        mode: carry,
        until: nowMs + carryWindowMs([before.rule]) + CARRY_SLACK_MS,
      };
      return { rule, generation: version, from: [link, ...open(before.from)].slice(0, MAX_LINKS) };
    }),
  };
}

/** The record stored at configKey: '<version>\n<JSON>' (config_write.lua compares the version). */
export function encodeConfig(config: LiveConfig): string {
  const body = {
    format: CONFIG_FORMAT,
    rules: config.rules.map((entry) => ({
      spec: ruleSpec(entry.rule),
      generation: entry.generation,
      from: entry.from.map((link) => ({
        spec: ruleSpec(link.rule),
        generation: link.generation,
        mode: link.mode,
        until: link.until,
      })),
    })),
  };
  return `${config.version}\n${JSON.stringify(body)}`;
}

/**
 * The configuration a record holds. A record of a later format is refused (SluiceError 'UNSUPPORTED' naming
 * its format), as is one that is not a record sluice wrote (SluiceError 'STORE_MISCONFIGURED').
 */
export function decodeConfig(record: string, where: string): LiveConfig {
  const unreadable = (why: string) =>
    new SluiceError('STORE_MISCONFIGURED', `the configuration stored at ${where} is not one sluice wrote: ${why}`);
  const newline = record.indexOf('\n');
  const version = Number(record.slice(0, newline));
  if (newline === -1 || !Number.isSafeInteger(version) || version < 1) throw unreadable('no version');
  let body: { format?: unknown; rules?: unknown };
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
  if (!Array.isArray(body.rules) || body.rules.length === 0) throw unreadable('no rules');
  try {
    return {
      version,
      rules: body.rules.map(
        (entry: { spec: unknown; generation: number; from: readonly Record<string, unknown>[] }) => ({
          rule: ruleFromSpec(entry.spec),
          generation: generationOf(entry.generation),
          from: entry.from.map((link) => ({
            rule: ruleFromSpec(link.spec),
            generation: generationOf(link.generation),
            mode: modeOf(link.mode),
            until: Number(link.until),
          })),
        }),
      ),
    };
  } catch (error) {
    throw unreadable(error instanceof Error ? error.message : String(error));
  }
}

function generationOf(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new Error(`generation ${String(value)}`);
  return value;
}

function modeOf(value: unknown): CarryMode {
  if (!CARRY_MODES.includes(value as CarryMode)) throw new Error(`carry mode ${String(value)}`);
  return value as CarryMode;
}
