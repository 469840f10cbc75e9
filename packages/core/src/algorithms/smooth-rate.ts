/**
 * Guava's SmoothRateLimiter, in milliseconds: the shared math of smoothBursty, smoothWarmingUp and the
 * RateLimiter facade. Field and function names follow Guava so the two can be read side by side. Guava
 * works in whole microseconds; we keep doubles, so waits agree with Guava's to within a microsecond.
 */

/** The rate-dependent constants of a smooth limiter (Guava's fields other than the state). */
export interface SmoothShape {
  readonly stableIntervalMs: number;
  readonly maxPermits: number;
  readonly coolDownIntervalMs: number;
  /** Warming up only: stored permits above this cost more than the stable interval. */
  readonly thresholdPermits: number;
  readonly slope: number;
  readonly warmingUp: boolean;
}

/** Guava's `(long)` cast of a product: NaN (0 x Infinity) becomes 0 instead of poisoning the state. */
function castWait(ms: number): number {
  return Number.isNaN(ms) ? 0 : ms;
}

export function burstyShape(permitsPerSecond: number, maxBurstSeconds: number): SmoothShape {
  const stableIntervalMs = 1000 / permitsPerSecond;
  return {
    stableIntervalMs,
    maxPermits: maxBurstSeconds * permitsPerSecond,
    coolDownIntervalMs: stableIntervalMs,
    thresholdPermits: 0,
    slope: 0,
    warmingUp: false,
  };
}

export function warmingUpShape(permitsPerSecond: number, warmupMs: number, coldFactor: number): SmoothShape {
  const stableIntervalMs = 1000 / permitsPerSecond;
  const coldIntervalMs = stableIntervalMs * coldFactor;
  const thresholdPermits = (0.5 * warmupMs) / stableIntervalMs;
  const maxPermits = thresholdPermits + (2.0 * warmupMs) / (stableIntervalMs + coldIntervalMs);
  return {
    stableIntervalMs,
    maxPermits,
    coolDownIntervalMs: warmupMs / maxPermits,
    thresholdPermits,
    slope: (coldIntervalMs - stableIntervalMs) / (maxPermits - thresholdPermits),
    warmingUp: true,
  };
}

/**
 * Guava's doSetRate rescaling of stored permits when the shape changes. `initialPermits` replaces Guava's
 * "a new SmoothBursty starts empty" (its default is 0, as Guava).
 */
export function rescaleStoredPermits(
  stored: number,
  oldMaxPermits: number,
  shape: SmoothShape,
  initialPermits: number,
): number {
  const { maxPermits } = shape;
  let next: number;
  if (oldMaxPermits === Infinity) next = shape.warmingUp ? 0 : maxPermits;
  else if (oldMaxPermits === 0) next = shape.warmingUp ? maxPermits : Math.min(initialPermits, maxPermits);
  else next = (stored * maxPermits) / oldMaxPermits;
  // 0 x Infinity / x (stored 0, rate now infinite): Guava keeps NaN, which behaves as "all permits".
  return Number.isNaN(next) ? maxPermits : next;
}

/** Stored permits after time moved to `nowMs` (Guava's resync; the caller moves nextFree to now). */
export function resyncedPermits(stored: number, nextFreeMs: number, nowMs: number, shape: SmoothShape): number {
  if (nowMs <= nextFreeMs) return stored;
  const newPermits = (nowMs - nextFreeMs) / shape.coolDownIntervalMs;
  return Math.min(shape.maxPermits, stored + newPermits);
}

function permitsToTime(shape: SmoothShape, permits: number): number {
  return shape.stableIntervalMs + permits * shape.slope;
}

/** How long spending `permitsToTake` of `storedPermits` costs (0 for bursty; the warm-up ramp otherwise). */
export function storedPermitsToWaitTime(shape: SmoothShape, storedPermits: number, permitsToTake: number): number {
  if (!shape.warmingUp) return 0;
  const availablePermitsAboveThreshold = storedPermits - shape.thresholdPermits;
  let ms = 0;
  let toTake = permitsToTake;
  if (availablePermitsAboveThreshold > 0) {
    const permitsAboveThresholdToTake = Math.min(availablePermitsAboveThreshold, toTake);
    const length =
      permitsToTime(shape, availablePermitsAboveThreshold) +
      permitsToTime(shape, availablePermitsAboveThreshold - permitsAboveThresholdToTake);
    ms = castWait((permitsAboveThresholdToTake * length) / 2.0);
    toTake -= permitsAboveThresholdToTake;
  }
  return ms + castWait(shape.stableIntervalMs * toTake);
}

/** The state a reservation leaves behind, and when the reserving caller may go. */
export interface Reservation {
  readonly storedPermits: number;
  readonly nextFreeMs: number;
  /** Guava's "moment available": the OLD next free time; this caller waits for the debt before it. */
  readonly momentAvailableMs: number;
}

/**
 * Guava's reserveEarliestAvailable: grant `permits` now, and push the next free time by what they cost.
 * The caller waits only for debt incurred before it; the next caller pays for these permits.
 */
export function reserveEarliestAvailable(
  shape: SmoothShape,
  storedPermits: number,
  nextFreeMs: number,
  permits: number,
  nowMs: number,
): Reservation {
  const stored = resyncedPermits(storedPermits, nextFreeMs, nowMs, shape);
  const nextFree = Math.max(nextFreeMs, nowMs);
  const storedPermitsToSpend = Math.min(permits, stored);
  const freshPermits = permits - storedPermitsToSpend;
  const waitMs =
    storedPermitsToWaitTime(shape, stored, storedPermitsToSpend) + castWait(freshPermits * shape.stableIntervalMs);
  return {
    storedPermits: stored - storedPermitsToSpend,
    nextFreeMs: nextFree + waitMs,
    momentAvailableMs: nextFree,
  };
}
