/**
 * `@sluice/core/engine`: the engine contract, the one thing a central backend implements (see
 * docs/writing-an-engine.md). Users pick an engine's package (`@sluice/redis`); engine authors implement
 * `Engine` and check it with the conformance suite (`checkEngine`) against the in-process `memoryEngine`.
 *
 * @example
 * import { checkEngine, type Engine } from '@sluice/core/engine'
 */
export type {
  AdjustAnswer,
  Adjustment,
  ConfigRead,
  ConfigRecord,
  ConfigWrite,
  DecideAnswer,
  Engine,
  EngineAsk,
  EngineDecision,
  EngineRules,
  EngineTime,
  Heartbeat,
  HeartbeatAnswer,
  LeaseAnswer,
  LeaseAsk,
  Stale,
} from './engine.js';
export { isStale } from './engine.js';
export { memoryEngine } from './memory-engine.js';
export type { MemoryEngineOptions } from './memory-engine.js';
export { checkEngine } from './conformance/check-engine.js';
export type { CheckEngineOptions, ConformanceReport } from './conformance/check-engine.js';
export { ConformanceError } from './conformance/conformance-error.js';
/**
 * The identity a rule counts a request's key against (the key, or the one the rule's `scope` names), and a
 * rule's state name (its name and state format: what `EngineRules.states` holds for a limiter's own rules).
 */
export { identityOf, stateName } from '../algorithms/rule-name.js';
