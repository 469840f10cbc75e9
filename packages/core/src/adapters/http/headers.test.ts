import { describe, expect, it } from 'vitest';
import { calendarWindow } from '../../algorithms/calendar-window.js';
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

  it('a calendar window: t and Retry-After are the exact seconds to the local boundary, w the longest the period lasts', async () => {
    // 20:59:58.5 UTC on 25 October 2026: 21:59:58.5 in Berlin, on a 25-hour day (the clocks went back at 03:00).
    const clock = new ManualClock(Date.UTC(2026, 9, 25, 20, 59, 58, 500));
    const limiter = createLimiter({
      rules: calendarWindow({ limit: 1, period: 'day', timeZone: 'Europe/Berlin', name: 'd' }),
      clock,
    });
    // Midnight in Berlin is 23:00 UTC: 2 h 1.5 s away, 7,202 whole seconds rounded up.
    expect(rateLimitHeaders(await limiter.tryAcquire('k'), limiter.rules, 'draft-8')).toEqual([
      ['RateLimit-Policy', '"d";q=1;w=86400'],
      ['RateLimit', '"d";r=0;t=7202'],
    ]);
    expect(rateLimitHeaders(await limiter.tryAcquire('k'), limiter.rules, 'draft-8')[0]).toEqual([
      'Retry-After',
      '7202',
    ]);
    const monthly = createLimiter({ rules: calendarWindow({ limit: 5, period: 'month', name: 'm' }), clock });
    expect(rateLimitHeaders(await monthly.tryAcquire('k'), monthly.rules, 'draft-8')).toEqual([
      ['RateLimit-Policy', '"m";q=5;w=2678400'],
      // 1 November 00:00 UTC is 6 days, 3 h and 1.5 s away.
      ['RateLimit', `"m";r=4;t=${6 * 86_400 + 3 * 3_600 + 2}`],
    ]);
  });
});
