/** Reading what a real OpenTelemetry SDK MeterProvider collected, for the metrics tests. */
import type { Attributes } from '@opentelemetry/api';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';

/** A reader collected on demand (the SDK's push and pull readers are both this underneath). */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

export interface Point {
  readonly attributes: Attributes;
  /** A sum's or gauge's value; a histogram's count. */
  readonly value: number;
}

export interface TestMeter {
  readonly provider: MeterProvider;
  /** Every data point of `name` now. */
  points(name: string): Promise<Point[]>;
  /** The summed value of `name`'s points whose attributes include `match`. */
  total(name: string, match?: Attributes): Promise<number>;
  /** Everything collected, as JSON (to look for what must never be there). */
  dump(): Promise<string>;
  shutdown(): Promise<void>;
}

export function testMeter(): TestMeter {
  const reader = new OnDemandReader();
  const provider = new MeterProvider({ readers: [reader] });
  const collect = async () => {
    const { resourceMetrics, errors } = await reader.collect();
    if (errors.length > 0) throw errors[0];
    return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  };
  const points = async (name: string): Promise<Point[]> =>
    (await collect())
      .filter((m) => m.descriptor.name === name)
      .flatMap((m) =>
        (m.dataPoints as DataPoint<number | Histogram>[]).map((p) => ({
          attributes: p.attributes,
          value: typeof p.value === 'number' ? p.value : p.value.count,
        })),
      );
  return {
    provider,
    points,
    async total(name, match = {}) {
      const matching = (await points(name)).filter((p) =>
        Object.entries(match).every(([k, v]) => p.attributes[k] === v),
      );
      return matching.reduce((sum, p) => sum + p.value, 0);
    },
    async dump() {
      return JSON.stringify(await collect());
    },
    shutdown: () => provider.shutdown(),
  };
}
