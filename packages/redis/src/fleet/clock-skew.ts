import { warnOnce } from '@sluice/core/internal';

/**
 * How far this process's clock may be from Redis's before it is said (SLUICE_CLOCK_SKEW): past a second, a
 * window decided on this node (divided mode, the fail mode, `clock: 'client'`) starts and ends at other times
 * than the fleet's, and a heartbeat written on this clock is taken as dead or live for that much too long.
 */
export const CLOCK_SKEW_WARN_MS = 1_000;

/**
 * This clock's offset from Redis's TIME (positive: ahead), from one call sent at `sentAt` and answered at
 * `answeredAt` on the clock, in which Redis read `redisTimeMs`, and the half round trip the offset is
 * uncertain by.
 * @example
 * clockOffset(1_000, 1_010, 65_005) // { offsetMs: -64_000, uncertaintyMs: 5 }
 */
export function clockOffset(
  sentAt: number,
  answeredAt: number,
  redisTimeMs: number,
): { offsetMs: number; uncertaintyMs: number } {
  return { offsetMs: (sentAt + answeredAt) / 2 - redisTimeMs, uncertaintyMs: Math.max(0, answeredAt - sentAt) / 2 };
}

/**
 * Compares this process's clock (`sentAt` and `answeredAt` are on it) with Redis's TIME as one heartbeat saw it, and says once (SLUICE_CLOCK_SKEW) when they are
 * more than CLOCK_SKEW_WARN_MS apart beyond what the round trip leaves uncertain, naming the offset. Returns
 * the offset, or undefined when Redis's time was not in the reply.
 * @example
 * checkClockSkew(sentAt, systemClock.now(), Number(reply[1]), 'limiter "api"')
 */
export function checkClockSkew(
  sentAt: number,
  answeredAt: number,
  redisTimeMs: number,
  where: string,
): number | undefined {
  if (!Number.isFinite(redisTimeMs)) return undefined;
  const { offsetMs, uncertaintyMs } = clockOffset(sentAt, answeredAt, redisTimeMs);
  if (Math.abs(offsetMs) - uncertaintyMs > CLOCK_SKEW_WARN_MS) {
    const by = Math.round(Math.abs(offsetMs)).toLocaleString('en-US');
    warnOnce(
      'SLUICE_CLOCK_SKEW',
      `this process's clock is ${by} ms ${offsetMs > 0 ? 'ahead of' : 'behind'} its Redis's (TIME), seen at a ` +
        `heartbeat of ${where}: windows decided here start and end ${by} ms from the fleet's, and this node's ` +
        'heartbeats are taken as live or dead that much too long',
    );
  }
  return offsetMs;
}
