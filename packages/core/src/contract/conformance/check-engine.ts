/**
 * checkEngine: the conformance suite an engine passes before any mode runs on it. Every case makes its calls
 * at times on the caller's clock (`at`), so an engine's answers are compared, bit for bit, with a memory
 * engine's made at the same times, and decisions with core's memory store's.
 */
import { ManualClock } from '../../foundation/clock.js';
import { SluiceRangeError, SluiceTypeError, inCall } from '../../foundation/errors.js';
import { type SchemaOf, booleanValue, option, optional, parseOptions } from '../../foundation/options.js';
import { describe, nonNegativeInteger, positiveInteger, prefixValue } from '../../foundation/validate.js';
import type { Engine } from '../engine.js';
import { memoryEngine } from '../memory-engine.js';
import { configCase, versionCase } from './config-cases.js';
import { ConformanceRun } from './conformance-run.js';
import { policyCase, refundWindowCase, ruleCases } from './decide-cases.js';
import { fleetCase } from './fleet-cases.js';
import { inputCase } from './input-cases.js';
import { carryCases } from './carry-cases.js';
import { leaseCases, leaseHandBackCase, leaseWindowCase } from './lease-cases.js';
import { messageCase } from './message-cases.js';
import { Prng } from './prng.js';

/** Options of `checkEngine`. */
export interface CheckEngineOptions {
  /**
   * The seed of the run's random cases: a failure names it, and the same seed replays the same cases.
   * @default a random seed
   */
  seed?: number;
  /**
   * Random steps of each random case (about one engine call each): the run's calls grow with it (at most 2,000).
   * @default 100
   */
  steps?: number;
  /**
   * The start of every prefix the run uses; a random part follows it, so that runs never see each other's state.
   * @default 'sluice-conformance'
   */
  prefix?: string;
  /**
   * Whether policies may hold rules counted against other identities than the request's key (a rule's `scope`
   * of `'everyone'` or of a key's tenant). false for an engine that decides such a policy part by part, with
   * what one part took given back when another refuses (Redis Cluster: the parts live in different slots):
   * all or nothing holds, but a given-back state is not the untouched one bit for bit (its anchor and reset
   * times move). Say so in the engine's docs when you pass false.
   * @default true
   */
  sharedIdentities?: boolean;
}

/** What a passed run checked. */
export interface ConformanceReport {
  /** Cases run. */
  readonly cases: number;
  /** Steps run, over every case. */
  readonly steps: number;
}

/** Random steps of each random case unless `steps` says otherwise. */
const DEFAULT_STEPS = 100;
/** The most steps a case takes: a remote engine's run stays bounded. */
const MAX_STEPS = 2_000;

function stepsValue(name: string, value: unknown): number {
  const steps = positiveInteger(name, value);
  if (steps > MAX_STEPS) throw new SluiceRangeError(name, value, `${name} must be at most ${MAX_STEPS}, got ${steps}`);
  return steps;
}

/** checkEngine's options, checked (see parseOptions); documented on CheckEngineOptions. */
export const CHECK_ENGINE_OPTIONS = {
  seed: optional(nonNegativeInteger),
  steps: option(stepsValue, DEFAULT_STEPS),
  prefix: option(prefixValue, 'sluice-conformance'),
  sharedIdentities: option(booleanValue, true),
} as const satisfies SchemaOf<CheckEngineOptions>;

const CASES: readonly ((run: ConformanceRun) => Promise<void>)[] = [
  inputCase,
  ...ruleCases.map((c) => c.run),
  policyCase,
  refundWindowCase,
  ...leaseCases.map((c) => c.run),
  leaseWindowCase,
  leaseHandBackCase,
  ...carryCases.map((c) => c.run),
  fleetCase,
  configCase,
  versionCase,
  messageCase,
];

function engineValue(value: unknown): Engine {
  const methods = ['decide', 'adjust', 'lease', 'heartbeat', 'readConfig', 'writeConfig', 'publish', 'subscribe'];
  const missing =
    typeof value !== 'object' || value === null
      ? undefined
      : methods.find((name) => typeof (value as Record<string, unknown>)[name] !== 'function');
  if (typeof value !== 'object' || value === null)
    throw new SluiceTypeError('engine', value, `engine must be an Engine, got ${describe(value)}`);
  if (missing !== undefined)
    throw new SluiceTypeError('engine', value, `engine must be an Engine: it has no method ${missing}`);
  return value as Engine;
}

/**
 * Checks `engine` against the engine contract: decisions of every algorithm and of policies, bans,
 * adjustments, leases, fleets' heartbeats, configuration records and versions, and messages, each compared
 * with a memory engine's answer at the same time. Resolves with what it ran; rejects with a ConformanceError
 * naming the case, the seed, the step, what was expected and what the engine answered. About one call per
 * step (under 2,000 by default), each case under a prefix of its own.
 * @example
 * const report = await checkEngine(myEngine, { seed: 42 })
 */
export async function checkEngine(engine: Engine, options?: CheckEngineOptions): Promise<ConformanceReport> {
  const { subject, o } = inCall('checkEngine', () => ({
    subject: engineValue(engine),
    o: parseOptions('checkEngine options', CHECK_ENGINE_OPTIONS, options, false),
  }));
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 32);
  // The reference's own clock never moves: every call names its time, and nothing expires under a case.
  const reference = memoryEngine({ clock: new ManualClock(0) });
  const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 2 ** 32).toString(36)}`;
  const run = new ConformanceRun(subject, reference, seed, o.steps, new Prng(seed), `${o.prefix}:${runId}`, {
    sharedIdentities: o.sharedIdentities,
  });
  for (const check of CASES) await check(run);
  return { cases: run.cases, steps: run.steps };
}
