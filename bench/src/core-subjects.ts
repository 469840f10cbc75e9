/**
 * What the core bench measures. Each subject sets itself up for a scenario and returns a batch that
 * makes BATCH decisions; the worker times it in a fresh process, so no subject's JIT state (a call site
 * made polymorphic by another algorithm) leaks into another's figure.
 */
import {
  type Algorithm,
  type AlgorithmKind,
  RateLimiter,
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  slidingWindowCounter,
  tokenBucket,
} from '@sluice/core';
import { ALGORITHMS, ALGORITHM_KINDS, type RuleSize } from '@sluice/test-kit';
import { InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { instrumentSluice } from '@sluice/otel';
import { RateLimiter as JhRateLimiter } from 'limiter';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { BATCH } from './harness.js';

export type Scenario = 'hot-allowed' | 'hot-limited' | '100k-allowed' | '100k-limited' | '10k-random-allowed';
export const SCENARIOS: readonly Scenario[] = [
  'hot-allowed',
  'hot-limited',
  '100k-allowed',
  '100k-limited',
  '10k-random-allowed',
];
export const KEYS = 100_000;

/**
 * Allowed: limits never reached, so every decision is a grant (a write). Limited: a limit far below the
 * rate each key is asked at, so most decisions are denials: 100 per second on the hot key, 1 per second
 * on each of 100,000 keys visited round robin (each is asked several times a second). 10k-random: 10,000
 * keys asked in a random order (the same order for every subject), as per-user traffic arrives: unlike
 * round robin, a key's state is rarely still in the CPU's caches when it is asked again.
 */
const HUGE = 1_000_000_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const RANDOM_KEYS = 10_000;
/** 2^20 key indices below RANDOM_KEYS from a fixed-seed xorshift32, so every run asks in one order. */
const randomOrder = (() => {
  const order = new Uint32Array(1 << 20);
  let x = 2463534242;
  for (let i = 0; i < order.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    order[i] = (x >>> 0) % RANDOM_KEYS;
  }
  return order;
})();
/** The key sequence of a scenario over many keys: round robin over KEYS, or the random order over RANDOM_KEYS. */
function keySequence(scenario: Scenario): () => string {
  let r = 0;
  if (scenario.startsWith('10k-random'))
    return () => keys[randomOrder[r++ & (randomOrder.length - 1)] as number] as string;
  return () => keys[r++ % KEYS] as string;
}
const many = (scenario: Scenario) => scenario.startsWith('100k') || scenario.startsWith('10k-random');
const limited = (scenario: Scenario) => scenario.endsWith('limited');
/** Permits per second when limited. */
const limitFor = (scenario: Scenario) => (many(scenario) ? 1 : 100);

type Batch = () => unknown;
export interface Subject {
  readonly id: string;
  readonly label: string;
  readonly peer: boolean;
  /** Undefined when the subject has no meaningful form for the scenario. */
  setup(scenario: Scenario): Batch | undefined;
}

/**
 * @sluice/otel on the OpenTelemetry SDK, as a service runs it: a MeterProvider whose reader exports once a
 * minute (never during a measurement), so what is timed is the recording on each decision.
 */
function instrumentWithSdk(): void {
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(0),
    exportIntervalMillis: 60_000,
  });
  instrumentSluice({ meterProvider: new MeterProvider({ readers: [reader] }) });
}

/**
 * `limitedRule(perSecond)` is the same algorithm limited to perSecond permits per second. `otel`: measured
 * with @sluice/otel recording every decision (the subject's id ends in `+otel`).
 */
function sluiceAlgorithm(
  id: string,
  allowed: () => Algorithm,
  limitedRule: (perSecond: number) => Algorithm,
  otel = false,
): Subject {
  return {
    id: otel ? `${id}+otel` : id,
    label: otel ? `sluice ${id}, OpenTelemetry SDK on` : `sluice ${id}`,
    peer: false,
    setup(scenario) {
      if (otel) instrumentWithSdk();
      const algorithm = limited(scenario) ? limitedRule(limitFor(scenario)) : allowed();
      if (many(scenario)) {
        const limiter = createLimiter({ rules: algorithm, store: memoryStore({ maxKeys: 2 * KEYS }) });
        const next = keySequence(scenario);
        return async () => {
          for (let i = 0; i < BATCH; i++) await limiter.tryAcquire(next());
        };
      }
      const limiter = createLimiter({ rules: algorithm });
      return async () => {
        for (let i = 0; i < BATCH; i++) await limiter.tryAcquire('hot');
      };
    },
  };
}

/** A rule that never limits in these scenarios: huge limits and rates, windows of a minute. */
const NEVER_LIMITS: RuleSize = { limit: HUGE, windowMs: 60_000, perSecond: HUGE };

/**
 * Where a kind's rule that never limits is sized apart: the log keeps one entry per grant, so its cost grows
 * with its limit (measured at 1,000 per second); a warm-up of 1 ms is warm at once.
 */
const NEVER_LIMITS_FOR: Partial<Record<AlgorithmKind, RuleSize>> = {
  slidingWindowLog: { limit: 1000, windowMs: 1000, perSecond: 1000 },
  smoothWarmingUp: { limit: HUGE, windowMs: 1, perSecond: HUGE },
};

/** A kind of the registry (every kind is measured): its rule that never limits, and one of `n` per second. */
function registered(kind: AlgorithmKind, otel = false): Subject {
  const { example } = ALGORITHMS[kind];
  return sluiceAlgorithm(
    kind,
    () => example(NEVER_LIMITS_FOR[kind] ?? NEVER_LIMITS),
    (n) => example({ limit: n, windowMs: 1000, perSecond: n }),
    otel,
  );
}

export const SUBJECTS: readonly Subject[] = [
  {
    id: 'rlf',
    label: 'rate-limiter-flexible RateLimiterMemory',
    peer: true,
    setup(scenario) {
      const rlf = new RateLimiterMemory(
        limited(scenario) ? { points: limitFor(scenario), duration: 1 } : { points: HUGE, duration: 60 },
      );
      const key = many(scenario) ? keySequence(scenario) : () => 'hot';
      return async () => {
        for (let i = 0; i < BATCH; i++) {
          // Its API rejects (with a non-Error) when limited, so every caller needs this try/catch.
          try {
            await rlf.consume(key());
          } catch {
            /* limited */
          }
        }
      };
    },
  },
  {
    id: 'limiter',
    label: 'limiter RateLimiter.tryRemoveTokens (sync)',
    peer: true,
    setup(scenario) {
      const opts = limited(scenario)
        ? { tokensPerInterval: limitFor(scenario), interval: 'second' as const }
        : { tokensPerInterval: HUGE, interval: 'minute' as const };
      if (!many(scenario)) {
        const l = new JhRateLimiter(opts);
        return () => {
          for (let i = 0; i < BATCH; i++) l.tryRemoveTokens(1);
        };
      }
      // It has no keys of its own: one limiter per key in a Map.
      const m = new Map<string, JhRateLimiter>();
      const next = keySequence(scenario);
      return () => {
        for (let i = 0; i < BATCH; i++) {
          const key = next();
          let l = m.get(key);
          if (l === undefined) m.set(key, (l = new JhRateLimiter(opts)));
          l.tryRemoveTokens(1);
        }
      };
    },
  },
  {
    id: 'facade',
    label: 'sluice RateLimiter.tryAcquire (sync)',
    peer: false,
    setup(scenario) {
      if (many(scenario)) return undefined;
      const limiter = RateLimiter.create(limited(scenario) ? limitFor(scenario) : HUGE);
      return () => {
        for (let i = 0; i < BATCH; i++) limiter.tryAcquire();
      };
    },
  },
  ...ALGORITHM_KINDS.map((kind) => registered(kind)),
  registered('fixedWindow', true),
  registered('tokenBucket', true),
];

/** Heap per key: each fills KEYS keys and keeps them alive. */
export const HEAP_SUBJECTS: Record<string, { label: string; fill: (n: number) => Promise<unknown> }> = {
  rlf: {
    label: 'rate-limiter-flexible RateLimiterMemory',
    fill: async (n) => {
      const l = new RateLimiterMemory({ points: 100, duration: 3600 });
      for (let i = 0; i < n; i++) await l.consume(keys[i] as string);
      return l;
    },
  },
  limiter: {
    label: 'limiter (one RateLimiter per key)',
    fill: async (n) => {
      const m = new Map<string, JhRateLimiter>();
      for (let i = 0; i < n; i++) {
        const l = new JhRateLimiter({ tokensPerInterval: 100, interval: 'hour' });
        l.tryRemoveTokens(1);
        m.set(keys[i] as string, l);
      }
      return m;
    },
  },
  ...Object.fromEntries(
    (
      [
        ['fixedWindow', () => fixedWindow({ limit: 100, windowMs: 3_600_000 })],
        ['tokenBucket', () => tokenBucket({ capacity: 100, refillPerSecond: 0.01 })],
        ['gcra', () => gcra({ permitsPerSecond: 0.01, burst: 100 })],
        ['slidingWindowCounter', () => slidingWindowCounter({ limit: 100, windowMs: 3_600_000 })],
        ['leakyBucket', () => leakyBucket({ capacity: 100, leakPerSecond: 0.01 })],
      ] as const
    ).map(([id, make]) => [
      id,
      {
        label: `sluice ${id}`,
        fill: async (n: number) => {
          // Room for twice n: every one of the n keys is kept, whatever the eviction order.
          const l = createLimiter({ rules: make(), store: memoryStore({ maxKeys: 2 * n }) });
          for (let i = 0; i < n; i++) await l.tryAcquire(keys[i] as string);
          return l;
        },
      },
    ]),
  ),
};
