/** The meter every sluice instrument belongs to. */
export const METER_NAME = '@sluice/otel';

/** Instrument names: the contract dashboards and alerts are written against. */
export const INSTRUMENTS = {
  decisions: 'sluice.decisions',
  duration: 'sluice.decision.duration',
  degraded: 'sluice.store.degraded',
  leasePermits: 'sluice.lease.permits',
  share: 'sluice.divided.share',
} as const;

/** Attribute names. None ever holds a rate-limited key: keys are unbounded and often personal data. */
export const LIMITER = 'sluice.limiter';
export const RULE = 'sluice.rule';
export const OUTCOME = 'sluice.outcome';
export const SOURCE = 'sluice.source';
export const SHADOWED = 'sluice.shadowed';
