import type { Limiter } from '@sluice/core';

/** How many of `attempts` single-permit tries on `key`, one after the other, the limiter admits. */
export async function admitted(limiter: Limiter, key: string, attempts: number): Promise<number> {
  let count = 0;
  for (let i = 0; i < attempts; i++) if ((await limiter.tryAcquire(key)).allowed) count++;
  return count;
}
