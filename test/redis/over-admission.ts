/** Counts how often a set of grant times breaks an algorithm's bound. Times are sorted ascending. */

/** Aligned windows with more than `limit` grants. */
export function alignedWindowsOver(
  times: readonly number[],
  limit: number,
  windowMs: number,
): { over: number; worst: number } {
  const counts = new Map<number, number>();
  for (const t of times) counts.set(Math.floor(t / windowMs), (counts.get(Math.floor(t / windowMs)) ?? 0) + 1);
  const values = [...counts.values()];
  return { over: values.filter((c) => c > limit).length, worst: Math.max(0, ...values) };
}

/** Grants j whose sliding window (t_j - windowMs, t_j] holds more than `limit` grants. */
export function slidingWindowsOver(
  times: readonly number[],
  limit: number,
  windowMs: number,
): { over: number; worst: number } {
  let over = 0;
  let worst = 0;
  let i = 0;
  for (let j = 0; j < times.length; j++) {
    while ((times[i] as number) <= (times[j] as number) - windowMs) i++;
    const count = j - i + 1;
    worst = Math.max(worst, count);
    if (count > limit) over++;
  }
  return { over, worst };
}

/**
 * Intervals [t_i, t_j] with more grants than capacity + rate x (t_j - t_i) (plus the documented 1 us of
 * time tolerance). O(n): count(i..j) = j - i + 1, so track the minimum of i - rate x t_i. Times are taken
 * relative to the first grant: rate x an epoch-scale time would carry more rounding than the threshold.
 */
export function bucketIntervalsOver(
  times: readonly number[],
  capacity: number,
  perMs: number,
): { over: number; worst: number } {
  let over = 0;
  let worst = -Infinity;
  let best = Infinity;
  const t0 = times[0] ?? 0;
  for (let j = 0; j < times.length; j++) {
    const t = (times[j] as number) - t0;
    best = Math.min(best, j - perMs * t);
    const excess = j - perMs * t - best + 1 - capacity - perMs * 1e-3;
    worst = Math.max(worst, excess);
    if (excess > 1e-6) over++;
  }
  return { over, worst };
}
