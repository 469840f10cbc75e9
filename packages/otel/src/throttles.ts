import type { Attributes, ObservableResult } from '@opentelemetry/api';
import type { ThrottleEvent } from '@sluice/core';
import { CountTable } from './attributes.js';
import { PAUSE_ORIGIN, THROTTLE, THROTTLE_OUTCOME } from './names.js';

/**
 * What the throttle instruments read: kept from the throttles' events (see ThrottleEvent). A key's count is
 * dropped when nothing of it waits, so memory follows what is queued, not every key ever seen.
 * @example
 * const throttles = new ThrottleTable()
 * throttles.record(event) // from observeSluice({ throttle })
 */
export class ThrottleTable {
  /** Per throttle, calls waiting per key (never exported by key). */
  readonly #queued = new Map<string, Map<string, number>>();
  readonly #pauses = new CountTable();

  /** Takes one event in; returns the wait to record (seconds, with its attributes) when the event ends one. */
  record(event: ThrottleEvent): { seconds: number; attributes: Attributes } | undefined {
    if (event.type === 'paused') {
      this.#pauses.add(`${event.throttle}\u0000${event.origin}`, () => ({
        [THROTTLE]: event.throttle,
        [PAUSE_ORIGIN]: event.origin,
      }));
      return undefined;
    }
    let queuedByKey = this.#queued.get(event.throttle);
    if (queuedByKey === undefined) this.#queued.set(event.throttle, (queuedByKey = new Map()));
    if (event.queued === 0) queuedByKey.delete(event.key);
    else queuedByKey.set(event.key, event.queued);
    if (event.type === 'queued') return undefined;
    const outcome = event.type === 'started' ? 'started' : event.reason;
    return { seconds: event.waitedMs / 1000, attributes: { [THROTTLE]: event.throttle, [THROTTLE_OUTCOME]: outcome } };
  }

  readonly observeQueued = (result: ObservableResult): void => {
    for (const [throttle, queuedByKey] of this.#queued) {
      let total = 0;
      for (const queued of queuedByKey.values()) total += queued;
      result.observe(total, { [THROTTLE]: throttle });
    }
  };

  readonly observePauses = this.#pauses.observe;
}
