/** Runs examples/llm-client to its summary (for the example's test and the minute-long run in test/faults). */
import { runExample } from './run-example.js';

/** What the example's last line says: the provider's served and refused calls, and how much of each limit the fleet used. */
export interface LlmSummary {
  readonly served: number;
  readonly refused: number;
  readonly requestsUsed: number;
  readonly tokensUsed: number;
  readonly elapsedMs: number;
}

/**
 * Runs the example with `args` on the Redis at `redisUrl`; resolves with its summary and everything it printed.
 * @example
 * const { summary } = await llmRun(['--seconds', '6', '--window-ms', '2000'], server.url, 60_000)
 */
export async function llmRun(
  args: readonly string[],
  redisUrl: string,
  maxWaitMs: number,
): Promise<{ summary: LlmSummary; output: string }> {
  const example = runExample('examples/llm-client/src/main.ts', { REDIS_URL: redisUrl }, args);
  try {
    const [, json] = await example.waitFor(/summary (\{.*\})/, maxWaitMs);
    return { summary: JSON.parse(json as string) as LlmSummary, output: example.output() };
  } finally {
    await example.stop();
  }
}
