import type { EngineAsk, EngineTime } from './engine.js';

/**
 * `asks`, each asked at `at` (a batch made at one moment).
 * @example
 * await engine.decide(rules, atEach([{ key: 'k', permits: 1, maxWaitMs: 0, peek: false }], 1_000))
 */
export function atEach(asks: ReadonlyArray<Omit<EngineAsk, 'at'>>, at: EngineTime): EngineAsk[] {
  return asks.map((ask) => ({ ...ask, at }));
}
