import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { smoothBursty } from '../algorithms/smooth.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import type { Rules } from './policy.js';

const rulesArb = fc.constantFrom<() => Rules>(
  () => fixedWindow({ limit: 3, windowMs: 1_000 }),
  () => tokenBucket({ capacity: 4, refillPerSecond: 2 }),
  () => slidingWindowLog({ limit: 2, windowMs: 500 }),
  () => smoothBursty({ permitsPerSecond: 5 }),
  () => [
    fixedWindow({ limit: 5, windowMs: 1_000, name: 'a' }),
    tokenBucket({ capacity: 2, refillPerSecond: 1, name: 'b' }),
  ],
);
const stepsArb = fc.array(
  fc.record({
    advanceMs: fc.integer({ min: 0, max: 400 }),
    key: fc.constantFrom('a', 'b'),
    permits: fc.integer({ min: 1, max: 3 }),
  }),
  { maxLength: 40 },
);

describe('shadow mode', () => {
  it('never denies, marks exactly what enforcement denies, and consumes exactly what enforcement consumes (property, ManualClock)', async () => {
    await fc.assert(
      fc.asyncProperty(rulesArb, stepsArb, async (makeRules, steps) => {
        const clock = new ManualClock(10_000);
        const enforcing = createLimiter({ rules: makeRules(), store: memoryStore({ clock }) });
        const shadow = createLimiter({ rules: makeRules(), store: memoryStore({ clock }), shadow: true });
        for (const step of steps) {
          clock.advance(step.advanceMs);
          const enforced = await enforcing.tryAcquire(step.key, { permits: step.permits });
          const dry = await shadow.tryAcquire(step.key, { permits: step.permits, maxWaitMs: 5_000 });
          expect(dry.allowed).toBe(true);
          expect(dry.shadowed === true).toBe(!enforced.allowed);
          // Same numbers as enforcement (a shadowed request is the denial, let through).
          expect({ ...dry, allowed: enforced.allowed, shadowed: undefined }).toEqual({
            ...enforced,
            shadowed: undefined,
          });
          expect(await shadow.peek(step.key)).toEqual(await enforcing.peek(step.key));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('acquire() never waits in shadow mode, even for a request that could never pass', async () => {
    const clock = new ManualClock(0);
    const shadow = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), clock, shadow: true });
    expect(await shadow.acquire('k')).toBe(0);
    expect(await shadow.acquire('k')).toBe(0);
    expect(await shadow.acquire('k', { permits: 5 })).toBe(0);
    expect((await shadow.peek('k')).remaining).toBe(0);
  });

  it('shadow must be a boolean', () => {
    expect(() => createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), shadow: 'yes' as never })).toThrow(
      SluiceTypeError,
    );
  });
});
