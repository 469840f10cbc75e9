/**
 * A call an engine refused as stale (`{ stale }`: the limiter's configuration is at a newer version; nothing
 * was taken), as a mode hands it to the layer that keeps the configuration (live limits), which reads it and
 * asks again. Its message carries `SLUICE_STALE <version>`, the words Redis's scripts refuse with, so one
 * reader (staleVersionOf) knows both.
 * @example
 * if (isStale(answer)) throw new StaleConfigurationError(answer.stale)
 */
export class StaleConfigurationError extends Error {
  override readonly name = 'StaleConfigurationError';

  constructor(readonly version: number) {
    super(`SLUICE_STALE ${version}: the limiter's configuration is at version ${version}; nothing was taken`);
  }
}

const STALE = /\bSLUICE_STALE (\d+)/;

/**
 * The newer configuration version a stale refusal names (a StaleConfigurationError, or an engine's error
 * saying SLUICE_STALE), or undefined for any other error.
 * @example
 * const newer = staleVersionOf(error) // a number: read the configuration and ask again
 */
export function staleVersionOf(error: unknown): number | undefined {
  if (error instanceof StaleConfigurationError) return error.version;
  if (!(error instanceof Error)) return undefined;
  const match = STALE.exec(error.message);
  const version = match === null ? Number.NaN : Number(match[1]);
  return Number.isSafeInteger(version) ? version : undefined;
}
