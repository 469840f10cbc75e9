import { warnOnce } from '../foundation/warnings.js';

/**
 * How far this process's clock may be from its engine's before it is said (SLUICE_CLOCK_SKEW): past a second, a
 * window decided on this node (divided mode, the fail mode, `clock: 'client'`) starts and ends at other times
 * than the fleet's, and a heartbeat written on this clock is taken as dead or live for that much too long.
 */
export const CLOCK_SKEW_WARN_MS = 1_000;

/**
 * This clock's offset from the engine's (positive: ahead), from one call sent at `sentAt` and answered at
 * `answeredAt` on the clock, in which the engine read `engineTimeMs`, and the half round trip the offset is
 * uncertain by.
 * @example
 * clockOffset(1_000, 1_010, 65_005) // { offsetMs: -64_000, uncertaintyMs: 5 }
 */
export function clockOffset(
  sentAt: number,
  answeredAt: number,
  engineTimeMs: number,
): { offsetMs: number; uncertaintyMs: number } {
  return { offsetMs: (sentAt + answeredAt) / 2 - engineTimeMs, uncertaintyMs: Math.max(0, answeredAt - sentAt) / 2 };
}

/**
 * Compares this process's clock (`sentAt` and `answeredAt` are on it) with the engine's as one heartbeat saw
 * it (`engineClock` names it: "its Redis's (TIME)"), and says once (SLUICE_CLOCK_SKEW) when they are more than
 * CLOCK_SKEW_WARN_MS apart beyond what the round trip leaves uncertain, naming the offset. Returns the offset,
 * or undefined when the engine's time was not in the reply.
 * @example
 * checkClockSkew(sentAt, systemClock.now(), Number(reply[1]), 'limiter "api"', "its Redis's (TIME)")
 */
export function checkClockSkew(
  sentAt: number,
  answeredAt: number,
  engineTimeMs: number,
  where: string,
  engineClock: string,
): number | undefined {
  if (!Number.isFinite(engineTimeMs)) return undefined;
  const { offsetMs, uncertaintyMs } = clockOffset(sentAt, answeredAt, engineTimeMs);
  if (Math.abs(offsetMs) - uncertaintyMs > CLOCK_SKEW_WARN_MS) {
    const by = Math.round(Math.abs(offsetMs)).toLocaleString('en-US');
    warnOnce(
      'SLUICE_CLOCK_SKEW',
      `this process's clock is ${by} ms ${offsetMs > 0 ? 'ahead of' : 'behind'} ${engineClock}, seen at a ` +
        `heartbeat of ${where}: windows decided here start and end ${by} ms from the fleet's, and this node's ` +
        'heartbeats are taken as live or dead that much too long',
    );
  }
  return offsetMs;
}

/** How messages name each engine's server. */
const SERVER_NAMES: Readonly<Record<string, string>> = { redis: 'Redis', postgres: 'PostgreSQL' };

/**
 * The server behind `engine`, as messages name it ('Redis', 'PostgreSQL'; else the engine's own name).
 * @example
 * serverName(redisEngine({ redis })) // 'Redis'
 */
export function serverName(engine: { readonly name: string }): string {
  return SERVER_NAMES[engine.name] ?? engine.name;
}

/**
 * The engine's clock, as SLUICE_CLOCK_SKEW names it ("its Redis's (TIME)").
 * @example
 * engineClockName(engine) // "its Redis's (TIME)"
 */
export function engineClockName(engine: { readonly name: string }): string {
  return engine.name === 'redis' ? "its Redis's (TIME)" : `its ${serverName(engine)}'s`;
}
