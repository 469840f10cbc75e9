/**
 * One sample of bench:limited-keys in a fresh process: memory-store decisions of one limiter configuration
 * alone in its process (so no configuration's shape reaches another's JIT feedback), in one scenario:
 * allowed (one key, every decision a grant far from the limit), limited (1,000 keys past their limit: every
 * decision a denial, each offered to the sketch), near (1,000 keys granted near their limit). Configurations:
 * bare (`limitedKeys: false, accessList: false`), sketch (the limited-keys sketch on, no lists), default
 * (both on, the lists empty: what every limiter runs unless told). Prints `{"ns": n}` per decision.
 */
import { createLimiter, tokenBucket } from '@sluice/core';
import { measure } from 'mitata';
import { BATCH } from './harness.js';

const scenario = process.argv[2] as 'allowed' | 'limited' | 'near';
const configuration = process.argv[3] as 'bare' | 'sketch' | 'default';
const rule = {
  allowed: tokenBucket({ capacity: 1e12, refillPerSecond: 1e12 }),
  limited: tokenBucket({ capacity: 1, refillPerSecond: 1e-9 }),
  // Refilled at once, so every grant leaves capacity - 1: near the limit by a nearLimit of 0.999.
  near: tokenBucket({ capacity: 100, refillPerSecond: 1e9 }),
}[scenario];
const keys = Array.from({ length: 1_000 }, (_, i) => `user:${i}`);
const limiter = createLimiter({
  rules: rule,
  ...(configuration === 'bare' ? { limitedKeys: false, accessList: false } : {}),
  ...(configuration === 'sketch' ? { limitedKeys: { nearLimit: 0.999 }, accessList: false } : {}),
  ...(configuration === 'default' ? { limitedKeys: { nearLimit: 0.999 } } : {}),
});
let i = 0;
const stats = await measure(
  async () => {
    for (let n = 0; n < BATCH; n++)
      await limiter.tryAcquire(scenario === 'allowed' ? 'hot' : (keys[i++ % 1_000] as string));
  },
  { min_cpu_time: 400e6, max_samples: 2_000 },
);
console.log(JSON.stringify({ ns: stats.p50 / BATCH }));
await limiter.close();
