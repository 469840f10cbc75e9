/** What one worker of the fleet runs, passed as JSON in SLUICE_WORKER. */
export type Mode = 'exact' | 'leased' | 'divided';

export type RuleConfig =
  | { readonly kind: 'tokenBucket'; readonly capacity: number; readonly refillPerSecond: number }
  | { readonly kind: 'fixedWindow'; readonly limit: number; readonly windowMs: number };

export interface WorkerConfig {
  readonly mode: Mode;
  readonly redisUrl: string;
  readonly prefix: string;
  readonly rule: RuleConfig;
  readonly nodeId: string;
  readonly durationMs: number;
  /** Concurrent callers, each asking again as soon as it is answered (saturating). */
  readonly inFlight: number;
  /** Paced load instead of saturation: requests per second offered by this worker. */
  readonly offeredPerSecond?: number;
  readonly share?: 'equal' | 'demand';
  readonly heartbeatMs?: number;
  /** Report every admission's time (tests); otherwise only per-second counts. */
  readonly recordTimes?: boolean;
}

/** One line of a worker's output (JSON per line on stdout). */
export type WorkerReport =
  | { readonly type: 'ready' }
  /** Decisions and admissions since the last report (and the admissions' times when recorded). */
  | { readonly type: 'tick'; readonly decisions: number; readonly admitted: number; readonly times?: readonly number[] }
  /** A lease: what it took, and what the node held after it. */
  | { readonly type: 'lease'; readonly granted: number; readonly held: number }
  | {
      readonly type: 'done';
      readonly decisions: number;
      readonly admitted: number;
      readonly leased: number;
      readonly fallbacks: number;
    };
