import { describe, expect, it } from 'vitest';
import { retryDelayMs } from './retry-after.js';

const now = Date.UTC(2026, 10, 27, 12, 0, 0);
const delay = (headers: Record<string, string>) => retryDelayMs(new Headers(headers), now);

describe('retryDelayMs reads what providers send', () => {
  it('Retry-After in seconds or as an HTTP date; it wins over the rest', () => {
    expect(delay({ 'retry-after': '2' })).toBe(2_000);
    expect(delay({ 'retry-after': '1.5' })).toBe(1_500);
    expect(delay({ 'retry-after': new Date(now + 30_000).toUTCString() })).toBe(30_000);
    expect(delay({ 'retry-after': new Date(now - 30_000).toUTCString() })).toBe(0);
    expect(delay({ 'retry-after': '2', 'ratelimit-reset': '60' })).toBe(2_000);
  });

  it('the RateLimit field (reset= or t=), RateLimit-Reset and X-RateLimit-Reset (seconds or a Unix time)', () => {
    expect(delay({ ratelimit: 'limit=100, remaining=0, reset=30' })).toBe(30_000);
    expect(delay({ ratelimit: '"default";r=0;t=12' })).toBe(12_000);
    expect(delay({ 'ratelimit-reset': '7' })).toBe(7_000);
    expect(delay({ 'x-ratelimit-reset': String((now + 45_000) / 1_000) })).toBe(45_000);
  });

  it("OpenAI's reset durations, skipping a limit that has some left", () => {
    expect(delay({ 'x-ratelimit-reset-tokens': '6m0s', 'x-ratelimit-remaining-tokens': '0' })).toBe(360_000);
    expect(delay({ 'x-ratelimit-reset-requests': '20ms' })).toBe(20);
    expect(
      delay({
        'x-ratelimit-reset-requests': '1h',
        'x-ratelimit-remaining-requests': '10',
        'x-ratelimit-reset-tokens': '1.5s',
        'x-ratelimit-remaining-tokens': '0',
      }),
    ).toBe(1_500);
  });

  it('nothing readable: undefined (the throttle then pauses minPauseMs)', () => {
    expect(delay({})).toBeUndefined();
    expect(delay({ 'retry-after': 'soon' })).toBeUndefined();
    expect(delay({ 'retry-after': '-3' })).toBeUndefined();
    expect(delay({ 'x-ratelimit-reset-tokens': 'later' })).toBeUndefined();
  });
});
