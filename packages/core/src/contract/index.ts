/**
 * `@sluice/core/engine`: the engine contract, the one thing a central backend implements (see
 * docs/writing-an-engine.md). Users pick an engine's package (`@sluice/redis`); engine authors implement
 * `Engine` and check it with the conformance suite.
 *
 * @example
 * import type { Engine } from '@sluice/core/engine'
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
