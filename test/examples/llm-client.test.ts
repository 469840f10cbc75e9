/**
 * examples/llm-client: three worker processes share a fake provider's requests and tokens per window through
 * one throttle on Redis. With the throttle's rules matching the provider's, the provider refuses nothing and
 * its binding limit is used to 95% or more; set twice too high, the provider's 429s pause the fleet and the
 * run still completes with few of them. The provider's window is 2 s here; the minute-long run (a 60 s
 * window) is in test/faults/llm-client.test.ts under `npm run test:faults`.
 */
import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';
import { llmRun } from './llm-run.js';

const testRedis = useTestRedis();
const SHORT = ['--workers', '3', '--seconds', '6', '--window-ms', '2000', '--requests', '20', '--tokens', '5000'];

describe('examples/llm-client', () => {
  it('rules matching the provider: no 429, and 95% or more of its binding limit used', async () => {
    const { summary, output } = await llmRun(SHORT, testRedis().server.url, 60_000);
    expect(output).toMatch(/second {3}served {3}refused \(429\) {3}queued/);
    expect(summary.refused).toBe(0);
    expect(Math.max(summary.requestsUsed, summary.tokensUsed)).toBeGreaterThanOrEqual(0.95);
    expect(Math.max(summary.requestsUsed, summary.tokensUsed)).toBeLessThanOrEqual(1.001);
  });

  it('rules twice too high: the 429s pause the fleet, the run completes, and few calls are refused', async () => {
    const { summary } = await llmRun([...SHORT, '--factor', '2'], testRedis().server.url, 60_000);
    expect(summary.refused).toBeGreaterThan(0);
    // Each refusal pauses every worker for at least a second: a few per second of the run, never a flood.
    expect(summary.refused).toBeLessThanOrEqual((4 * summary.elapsedMs) / 1000);
    expect(summary.served).toBeGreaterThan(2 * summary.refused);
  });
});
