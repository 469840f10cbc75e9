import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** Decisions timed per mitata sample; large enough that the per-sample overhead disappears. */
export const BATCH = 1_000;

/** The median of interleaved rounds' figures (the upper middle one of an even count). */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
}

export function fmt(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)}k`;
  return n.toFixed(0);
}

export function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc to measure heap');
  for (let i = 0; i < 4; i++) g();
}

export function writeJson(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
}

/** Every command Redis has run (scripts' inner commands too), leaving out the INFO calls that ask. */
export async function totalCommands(redis: { info(section: string): Promise<string> }): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (m[1] !== 'info') total += Number(m[2]);
  return total;
}

/**
 * CPU time the redis-server process has used, in microseconds (INFO cpu: user + system). Unlike commandstats
 * it holds everything a decision costs Redis: reading the request, the script, writing the reply.
 */
export async function redisCpuUs(redis: { info(section: string): Promise<string> }): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** Script calls since the last CONFIG RESETSTAT, and Redis's microseconds in them (INFO commandstats). */
export async function scriptStats(redis: {
  info(section: string): Promise<string>;
}): Promise<{ calls: number; usec: number }> {
  const info = await redis.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

/** Script calls clients sent (EVALSHA, EVAL, FCALL): a client's round trips, not the commands scripts ran. */
export async function scriptCalls(redis: { info(section: string): Promise<string> }): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+)/g)) total += Number(m[2]);
  return total;
}

/**
 * The most a token bucket's admissions, counted per whole second, went past its bound over any run of whole
 * seconds: capacity + rate x the run's length (0: never over). A second may admit more than the rate after a
 * slower one; no run of seconds may admit more than this.
 * @example
 * overBound([4_000, 8_000, 4_000], 4_000, 4_000) // 0: the bucket's capacity spent in the second second
 */
export function overBound(perSecond: readonly number[], capacity: number, ratePerSecond: number): number {
  let worst = 0;
  for (let from = 0; from < perSecond.length; from++) {
    let sum = 0;
    for (let to = from; to < perSecond.length; to++) {
      sum += perSecond[to] as number;
      worst = Math.max(worst, sum - (capacity + ratePerSecond * (to - from + 1)));
    }
  }
  return worst;
}

/**
 * Runs `total` decisions, `inFlight` awaited at a time as a server awaits them (decision i on `keyOf(i)`):
 * the wall time taken and each decision's latency in ms, sorted.
 * @example
 * const { elapsedMs, latencies } = await driveInFlight((key) => limiter.tryAcquire(key), (i) => keys[i % 10_000], 60_000, 128)
 */
export async function driveInFlight(
  decide: (key: string) => Promise<unknown>,
  keyOf: (i: number) => string,
  total: number,
  inFlight: number,
): Promise<{ readonly elapsedMs: number; readonly latencies: Float64Array }> {
  const latencies = new Float64Array(total);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const t0 = performance.now();
        await decide(keyOf(i));
        latencies[i] = performance.now() - t0;
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  latencies.sort();
  return { elapsedMs, latencies };
}
