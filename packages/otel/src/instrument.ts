import { type MeterProvider, type ObservableResult, createNoopMeter, metrics } from '@opentelemetry/api';
import {
  type ObservedDecision,
  SluiceTypeError,
  type ThrottleEvent,
  limiterStatuses,
  observeSluice,
} from '@sluice/core';
import { type OptionNames, describeValue, inCall, knownOptions, warnOnce } from '@sluice/core/internal';
import { CountTable, DecisionSeriesTable } from './attributes.js';
import { INSTRUMENTS, LIMITER, METER_NAME, RULE } from './names.js';
import { ThrottleTable } from './throttles.js';

/** Options of `instrumentSluice`. */
export interface InstrumentSluiceOptions {
  /**
   * Where the instruments are created.
   * @default the global MeterProvider (`metrics.getMeterProvider()`), read once, now: register the SDK first
   */
  meterProvider?: MeterProvider;
}

/** What `instrumentSluice` returns: stop() removes the instruments' callbacks and stops counting. */
export interface SluiceInstrumentation {
  readonly meterProvider: MeterProvider;
  /** Stops counting and removes the instruments' callbacks; instrumenting this provider again starts afresh. */
  stop(): void;
}

// One instrumentation per MeterProvider in the process (also across ESM and CommonJS copies of this
// package): instrumenting twice must not count each decision twice.
const REGISTRY_KEY = Symbol.for('sluice.otel.instrumentations.v1');
const host = globalThis as { [REGISTRY_KEY]?: Map<MeterProvider, SluiceInstrumentation> };
const instrumentations: Map<MeterProvider, SluiceInstrumentation> = (host[REGISTRY_KEY] ??= new Map());

/** Decision latency buckets, in seconds: a memory decision takes microseconds, a Redis one about a millisecond. */
const DURATION_BUCKETS = [
  0.000_005, 0.000_025, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5,
];

/** Throttle wait buckets, in seconds: a call starts at once, after a window's rest, or after a provider's pause. */
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const INSTRUMENT_SLUICE_OPTIONS: OptionNames<InstrumentSluiceOptions> = { meterProvider: true };

/**
 * Records OpenTelemetry metrics for every sluice limiter in the process (created before or after this
 * call): `sluice.decisions`, `sluice.decision.duration`, `sluice.store.degraded`, `sluice.lease.permits`,
 * `sluice.divided.share`, and for throttles `sluice.throttle.queued`, `sluice.throttle.wait` and
 * `sluice.throttle.pauses` (see the package README for attributes). No attribute ever holds a rate-limited key.
 * Calling it again with the same provider returns the same instrumentation.
 *
 * @example
 * import { instrumentSluice } from '@sluice/otel'
 * instrumentSluice({ meterProvider }) // or instrumentSluice() after registering the SDK globally
 */
export function instrumentSluice(options: InstrumentSluiceOptions = {}): SluiceInstrumentation {
  return inCall('instrumentSluice', () => {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceTypeError(
        'options',
        options,
        `instrumentSluice options must be an object ({ meterProvider? }), got ${describeValue(options)}`,
      );
    }
    knownOptions('instrumentSluice options', INSTRUMENT_SLUICE_OPTIONS, options, false);
    const provider = options.meterProvider ?? metrics.getMeterProvider();
    if (typeof provider !== 'object' || provider === null || typeof provider.getMeter !== 'function') {
      throw new SluiceTypeError(
        'meterProvider',
        provider,
        'instrumentSluice: meterProvider must be an OpenTelemetry MeterProvider (with getMeter())',
      );
    }
    const existing = instrumentations.get(provider);
    if (existing !== undefined) return existing;

    const meter = provider.getMeter(METER_NAME);
    // The API's global provider is a no-op until an SDK registers one, and it is read once, here.
    if (options.meterProvider === undefined && meter instanceof (createNoopMeter().constructor as new () => unknown)) {
      warnOnce(
        'SLUICE_OTEL_NO_PROVIDER',
        'instrumentSluice() found no MeterProvider registered globally, so sluice metrics go nowhere.',
      );
    }
    // The counters are asynchronous: sluice keeps the counts (an integer increment per decision) and the SDK
    // reads them when it collects. A synchronous add() costs the SDK about 1.5 us per call (it hashes the
    // attributes every time), ten times a memory decision; the histogram has no asynchronous form.
    const decisions = meter.createObservableCounter(INSTRUMENTS.decisions, {
      description: 'Rate-limit decisions answered, by limiter, deciding rule, outcome and where the decision was made',
      unit: '{decision}',
    });
    const duration = meter.createHistogram(INSTRUMENTS.duration, {
      description: 'Time from a tryAcquire or acquire call to its decision, waits included',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    const leased = meter.createObservableCounter(INSTRUMENTS.leasePermits, {
      description: 'Permits this process leased from Redis (leased mode)',
      unit: '{permit}',
    });
    const degraded = meter.createObservableGauge(INSTRUMENTS.degraded, {
      description: '1 while a fail mode decides because the store cannot reach Redis, else 0',
      unit: '1',
    });
    const share = meter.createObservableGauge(INSTRUMENTS.share, {
      description: "This process's fraction of a divided limiter's fleet-wide limit",
      unit: '1',
    });
    const throttleQueued = meter.createObservableGauge(INSTRUMENTS.throttleQueued, {
      description: 'Outgoing calls waiting to start in this process, by throttle (their turn, the rate, a pause)',
      unit: '{call}',
    });
    const throttleWait = meter.createHistogram(INSTRUMENTS.throttleWait, {
      description: "Time from a throttle's run to the call's start, or to its leaving (timeout, abort, close)",
      unit: 's',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    });
    const throttlePauses = meter.createObservableCounter(INSTRUMENTS.throttlePauses, {
      description: 'Pauses of a throttle, set here or heard from another node (a provider answered 429)',
      unit: '{pause}',
    });
    const throttles = new ThrottleTable();
    const nearLimit = meter.createObservableCounter(INSTRUMENTS.nearLimit, {
      description:
        'Grants that left less than the limiter nearLimit (20% unless set) of the limit, by limiter and rule',
      unit: '{decision}',
    });
    const nearByRule = new CountTable();
    const series = new DecisionSeriesTable();
    const leasedByLimiter = new CountTable();
    const observeDecisions = (result: ObservableResult): void => {
      for (const s of series.all()) result.observe(s.count, s.attributes);
    };
    const observeDegraded = (result: ObservableResult): void => {
      for (const [limiter, value] of byLimiter(
        (s) => (s.degraded === undefined ? undefined : s.degraded ? 1 : 0),
        Math.max,
      )) {
        result.observe(value, { [LIMITER]: limiter });
      }
    };
    const observeShare = (result: ObservableResult): void => {
      // Two divided limiters of one prefix in one process split the prefix's limit between them.
      for (const [limiter, value] of byLimiter(
        (s) => s.share,
        (a, b) => a + b,
      ))
        result.observe(value, { [LIMITER]: limiter });
    };
    const callbacks = [
      [decisions, observeDecisions],
      [nearLimit, nearByRule.observe],
      [leased, leasedByLimiter.observe],
      [degraded, observeDegraded],
      [share, observeShare],
      [throttleQueued, throttles.observeQueued],
      [throttlePauses, throttles.observePauses],
    ] as const;
    for (const [instrument, callback] of callbacks) instrument.addCallback(callback);

    const stopObserving = observeSluice({
      decision(event: ObservedDecision) {
        const s = series.of(event);
        s.count++;
        duration.record(event.durationMs / 1000, s.attributes);
        if (event.nearLimit) {
          nearByRule.add(`${event.limiter}\u0000${event.decision.rule}`, () => ({
            [LIMITER]: event.limiter,
            [RULE]: event.decision.rule,
          }));
        }
      },
      leased(limiter: string, permits: number) {
        leasedByLimiter.add(limiter, () => ({ [LIMITER]: limiter }), permits);
      },
      throttle(event: ThrottleEvent) {
        const wait = throttles.record(event);
        if (wait !== undefined) throttleWait.record(wait.seconds, wait.attributes);
      },
    });

    const instrumentation: SluiceInstrumentation = {
      meterProvider: provider,
      stop() {
        if (instrumentations.get(provider) !== instrumentation) return;
        instrumentations.delete(provider);
        stopObserving();
        for (const [instrument, callback] of callbacks) instrument.removeCallback(callback);
      },
    };
    instrumentations.set(provider, instrumentation);
    return instrumentation;
  });
}

/** One value per limiter prefix from the listed limiters' standing (several limiters may share a prefix). */
function byLimiter(
  read: (status: ReturnType<typeof limiterStatuses>[number]) => number | undefined,
  combine: (a: number, b: number) => number,
): Map<string, number> {
  const values = new Map<string, number>();
  for (const status of limiterStatuses()) {
    const value = read(status);
    if (value === undefined) continue;
    const seen = values.get(status.limiter);
    values.set(status.limiter, seen === undefined ? value : combine(seen, value));
  }
  return values;
}
