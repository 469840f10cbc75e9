/**
 * `@sluice/test-kit`: what every suite and bench shares. The one registry of algorithms (ALGORITHMS: a rule of a
 * chosen size and rules of generated parameters per kind), the generators built on it, request timelines with
 * the checks every algorithm keeps, and control steps.
 */
export {
  ALGORITHMS,
  ALGORITHM_KINDS,
  algorithmArb,
  everyAlgorithm,
  kindsWhere,
  shapeArb,
} from './algorithms.js';
export type { AlgorithmCase, RuleSize, Shape } from './algorithms.js';
export { controlStepsArb, ruleMakerArb } from './controls.js';
export type { ControlStep, RuleMaker } from './controls.js';
export {
  bucketSlack,
  byKey,
  expectBucketBound,
  historyArb,
  maxInInterval,
  runTimeline,
  stateAfter,
  timelineArb,
} from './timelines.js';
export type { Admission, HistoryStep, TimelineEvent, TimelineRun } from './timelines.js';
export { heldProvider } from './providers.js';
export type { HeldProvider } from './providers.js';
