/**
 * examples/llm-client for a minute against a provider with a minute's window (600 requests and 150,000
 * tokens per minute, three workers of eight callers): with the throttle's rules matching the provider's, not
 * one 429 and 95% or more of the binding limit used; twice too high, the provider's 429s pause the fleet and
 * the run still completes. `npm run test:faults` runs it (two minutes); the main suite runs the same with a
 * 2 s window (test/examples/llm-client.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { llmRun } from '../examples/llm-run.js';
import { useTestRedis } from '../harness/use-redis.js';

const FULL = process.env.SLUICE_FAULTS === 'full';
const testRedis = useTestRedis();
const MINUTE = ['--workers', '3', '--seconds', '60', '--window-ms', '60000'];

describe.runIf(FULL)('examples/llm-client over a minute (npm run test:faults)', () => {
  it('rules matching the provider: no 429 in a minute, 95% or more of its binding limit used', async () => {
    const { summary, output } = await llmRun(MINUTE, testRedis().server.url, 120_000);
    console.log(output);
    expect(summary.refused).toBe(0);
    expect(Math.max(summary.requestsUsed, summary.tokensUsed)).toBeGreaterThanOrEqual(0.95);
  }, 150_000);

  it('rules twice too high: the run completes; each 429 pauses the fleet, so at most a few a second', async () => {
    const { summary, output } = await llmRun([...MINUTE, '--factor', '2'], testRedis().server.url, 120_000);
    console.log(output);
    expect(summary.refused).toBeGreaterThan(0);
    expect(summary.refused).toBeLessThanOrEqual((4 * summary.elapsedMs) / 1000);
  }, 150_000);
});
