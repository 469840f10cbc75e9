/** The meter every sluice instrument belongs to. */
export const METER_NAME = '@sluice/otel';

/** Instrument names: the contract dashboards and alerts are written against. */
export const INSTRUMENTS = {
  decisions: 'sluice.decisions',
  nearLimit: 'sluice.decisions.near_limit',
  duration: 'sluice.decision.duration',
  degraded: 'sluice.store.degraded',
  leasePermits: 'sluice.lease.permits',
  share: 'sluice.divided.share',
  throttleQueued: 'sluice.throttle.queued',
  throttleWait: 'sluice.throttle.wait',
  throttlePauses: 'sluice.throttle.pauses',
} as const;

/** Attribute names. None ever holds a rate-limited key: keys are unbounded and often personal data. */
export const LIMITER = 'sluice.limiter';
/** The deciding rule's name (a policy's tightest rule). */
export const RULE = 'sluice.rule';
/** `allowed` or `denied` (a shadowed would-be denial counts as `denied`). */
export const OUTCOME = 'sluice.outcome';
/** Where the decision was made: `memory`, `redis`, `deny_cache`, `fallback`, `lease`, `share` or `access_list`. */
export const SOURCE = 'sluice.source';
/** `true` on decisions shadow mode let through; absent otherwise. */
export const SHADOWED = 'sluice.shadowed';
/** A throttle's name (its limiter's prefix). */
export const THROTTLE = 'sluice.throttle';
/** How a throttled call's wait ended: `started`, or why it left (`wait_expired`, `aborted`, `closed`, ...). */
export const THROTTLE_OUTCOME = 'sluice.throttle.outcome';
/** Who set a pause: `here` (this process) or `fleet` (another node, heard here). */
export const PAUSE_ORIGIN = 'sluice.pause.origin';
