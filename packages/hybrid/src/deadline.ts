/** What a promise that missed its deadline resolves to instead. */
export const MISSED = Symbol('missed the deadline');

/**
 * Waits for `promise` at most `ms`. The promise keeps running: a lease that arrives late is still
 * credited by whoever started it. Rejections pass through.
 */
export function withinDeadline<T>(promise: Promise<T>, ms: number): Promise<T | typeof MISSED> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const missed = new Promise<typeof MISSED>((resolve) => {
    timer = setTimeout(() => resolve(MISSED), ms);
  });
  return Promise.race([promise, missed]).finally(() => clearTimeout(timer));
}
