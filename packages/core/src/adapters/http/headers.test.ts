import { describe, expect, it } from 'vitest';
import { smoothBursty } from '../../algorithms/smooth.js';
import { tokenBucket } from '../../algorithms/token-bucket.js';
import { ManualClock } from '../../foundation/clock.js';
import { createLimiter } from '../../engine/limiter.js';
import { rateLimitHeaders } from './headers.js';

/** The README's "Reading the numbers" examples, as the limiter produces them. */
describe('what t means per algorithm', () => {
  it('a smooth limiter: w is one permit interval, t the time until the burst is stored again, Retry-After the next free slot', async () => {
    const limiter = createLimiter({
      rules: smoothBursty({ permitsPerSecond: 0.2, maxBurstSeconds: 5, name: 's' }),
      clock: new ManualClock(0),
    });
    const granted = await limiter.tryAcquire('k');
    expect(rateLimitHeaders(granted, limiter.rules, 'draft-8')).toEqual([
      ['RateLimit-Policy', '"s";q=1;w=5'],
      ['RateLimit', '"s";r=0;t=10'],
    ]);
    const denied = await limiter.tryAcquire('k');
    expect(rateLimitHeaders(denied, limiter.rules, 'draft-8')[0]).toEqual(['Retry-After', '5']);
  });

  it('a token bucket: w is a full refill, t the time until it is full again', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 10, refillPerSecond: 2, name: 'b' }), clock });
    for (let i = 0; i < 4; i++) await limiter.tryAcquire('k');
    expect(rateLimitHeaders(await limiter.tryAcquire('k'), limiter.rules, 'draft-8')).toEqual([
      ['RateLimit-Policy', '"b";q=10;w=5'],
      ['RateLimit', '"b";r=5;t=3'],
    ]);
  });
});
