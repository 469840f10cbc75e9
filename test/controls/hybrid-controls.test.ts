/**
 * The controls in leased and divided mode: what each mode can honour works (refund to a node's lease or
 * share, penalties past it), and what it cannot is refused at construction or call with a typed error
 * naming the mode and the control, never ignored.
 */
import { ManualClock, SluiceError, SluiceRangeError, createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();
let n = 0;
const prefix = () => `hyctl${++n}`;

describe.each(['leasedLimiter', 'dividedLimiter'] as const)('a limiter on a %s store', (mode) => {
  const make = (algorithm: Parameters<typeof leasedLimiterOn>[0]['rules'], extra: Record<string, unknown> = {}) =>
    mode === 'leasedLimiter'
      ? leasedLimiterOn({
          rules: algorithm,
          redis: redis().redis,
          prefix: prefix(),
          clock: new ManualClock(1_000_000),
          maxLease: 4,
          ...extra,
        })
      : dividedLimiterOn({
          rules: algorithm,
          redis: redis().redis,
          prefix: prefix(),
          clock: new ManualClock(1_000_000),
          assumedNodes: 1,
          ...extra,
        });

  // Constructing refuses what the mode's store declares it cannot do, naming the store (leasedStore, dividedStore).
  const store = mode === 'leasedLimiter' ? 'leasedStore' : 'dividedStore';

  it('refuses plans and blockMs at construction, block and unblock at call, naming the mode and the control', async () => {
    expect(() => make(fixedWindow({ limit: 5, windowMs: 1_000, blockMs: 60_000 }))).toThrow(
      new RegExp(`${store} cannot honour blockMs`),
    );
    const hybrid =
      mode === 'leasedLimiter' ? leasedStore({ redis: redis().redis }) : dividedStore({ redis: redis().redis });
    const plans = () =>
      createLimiter({ plans: { free: fixedWindow({ limit: 1, windowMs: 1_000 }) }, store: hybrid, prefix: prefix() });
    expect(plans).toThrow(SluiceRangeError);
    expect(plans).toThrow(new RegExp(`${store} cannot honour plans`));
    await hybrid.close();
    const limiter = make(fixedWindow({ limit: 5, windowMs: 1_000 }));
    await expect(limiter.block('k', 1_000)).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      message: expect.stringContaining(`${store} keeps no bans`),
    });
    await expect(limiter.unblock('k')).rejects.toBeInstanceOf(SluiceError);
    expect(limiter.plans).toBeUndefined();
    await limiter.close();
  });

  it('refund gives back what this node took, never more; penalize denies past it; bad permits are typed errors', async () => {
    const limiter = make(tokenBucket({ capacity: 4, refillPerSecond: 0.001 }));
    for (let i = 0; i < 4; i++) expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    await limiter.refund('k', 2);
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    await limiter.refund('k', 100); // only the 4 it spent could come back
    let granted = 0;
    for (let i = 0; i < 10; i++) if ((await limiter.tryAcquire('k')).allowed) granted++;
    expect(granted).toBe(4);
    await limiter.refund('k', 4);
    await limiter.penalize('k', 10);
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    await expect(limiter.refund('k', -1)).rejects.toBeInstanceOf(SluiceRangeError);
    await expect(limiter.penalize('k', 0.5)).rejects.toBeInstanceOf(SluiceRangeError);
    await limiter.close();
  });
});

describe('leased mode: a penalty past the lease reaches the central bucket', () => {
  it("a second node sees the first node's penalty", async () => {
    const clock = new ManualClock(5_000_000);
    const p = prefix();
    const a = leasedLimiterOn({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 0.001 }),
      redis: redis().redis,
      prefix: p,
      clock,
      nodeId: 'a',
      maxLease: 2,
    });
    const b = leasedLimiterOn({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 0.001 }),
      redis: redis().redis,
      prefix: p,
      clock,
      nodeId: 'b',
      maxLease: 10,
    });
    expect((await a.tryAcquire('k')).allowed).toBe(true); // a leases 2
    await a.penalize('k', 7); // 1 from a's lease, 6 from the central bucket (8 left there): 2 remain
    let granted = 0;
    for (let i = 0; i < 10; i++) if ((await b.tryAcquire('k')).allowed) granted++;
    expect(granted).toBe(2);
    await a.close();
    await b.close();
  });
});
