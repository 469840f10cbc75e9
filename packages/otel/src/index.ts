/**
 * `@sluice/otel`: OpenTelemetry metrics for every sluice limiter in the process, through the observation
 * hook of `@sluice/core` (which costs nothing until something observes).
 */
export { instrumentSluice } from './instrument.js';
export type { InstrumentSluiceOptions, SluiceInstrumentation } from './instrument.js';
