/** The module's options, as provided by SluiceModule.forRoot. */
export const SLUICE_OPTIONS = Symbol.for('sluice.nestjs.options');
/** Metadata: a route's or controller's @RateLimit options. */
export const RATE_LIMIT = 'sluice:rate-limit';
/** Metadata: @SkipRateLimit on a route or controller. */
export const SKIP_RATE_LIMIT = 'sluice:skip-rate-limit';
