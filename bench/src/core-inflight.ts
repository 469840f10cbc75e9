/**
 * The memory store as a server drives it: 128 decisions in flight at once, each an awaited promise (one per
 * request, as an HTTP server's handlers await theirs), over 10,000 keys asked in a fixed random order. What a
 * sequential loop hides shows here: the promises and closures each decision allocates, the garbage they make,
 * and the pauses that collecting it puts in the tail. Reported per subject: decisions per second and the
 * latency of a decision from its call to its await's return, p50, p99 and p99.9; the garbage collections
 * during the timed run (count, total and longest pause); and, in a run of its own, the bytes of heap each
 * decision allocates.
 *
 * The subjects are alike in what they decide: a fixed window (RateLimiterMemory's `points` per `duration` is
 * one; sluice's fixedWindow) or a token bucket, with limits never reached, so every decision is a grant.
 */
import { PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { RateLimiterMemory } from 'rate-limiter-flexible';

/**
 * sluice as this checkout has it, or the sources at SLUICE_CORE (a path to another checkout's
 * packages/core/src/index.ts), so one interleaved run can set a change beside what it changed.
 */
const { createLimiter, fixedWindow, memoryStore, tokenBucket }: typeof import('@sluice/core') = await import(
  process.env.SLUICE_CORE ?? '@sluice/core'
);

export const IN_FLIGHT = 128;
const KEYS = 10_000;
const HUGE = 1_000_000_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const settled = Promise.resolve();

/** The subjects of the in-flight scenario: a decision that resolves (or rejects, RateLimiterMemory when limited). */
export const IN_FLIGHT_SUBJECTS: Record<string, { label: string; make: () => (key: string) => Promise<unknown> }> = {
  rlf: {
    label: 'rate-limiter-flexible RateLimiterMemory',
    make: () => {
      const rlf = new RateLimiterMemory({ points: HUGE, duration: 60 });
      return (key) => rlf.consume(key);
    },
  },
  fixedWindow: {
    label: 'sluice fixedWindow',
    make: () => {
      const limiter = createLimiter({ rules: fixedWindow({ limit: HUGE, windowMs: 60_000 }), store: memoryStore() });
      return (key) => limiter.tryAcquire(key);
    },
  },
  tokenBucket: {
    label: 'sluice tokenBucket',
    make: () => {
      const limiter = createLimiter({
        rules: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE }),
        store: memoryStore(),
      });
      return (key) => limiter.tryAcquire(key);
    },
  },
};

/** Not a limiter: one settled promise, so the allocation figure of the drive loop itself can be taken away. */
const NOTHING = { label: 'nothing (the drive loop alone)', make: () => (_key: string) => settled };

/** `total` decisions, IN_FLIGHT at a time; the keys in a fixed pseudo-random order. */
async function drive(decide: (key: string) => Promise<unknown>, total: number, latencies?: Float64Array) {
  let next = 0;
  let x = 2463534242;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        const key = keys[(x >>> 0) % KEYS] as string;
        const t0 = performance.now();
        await decide(key);
        if (latencies) latencies[i] = performance.now() - t0;
      }
    }),
  );
}

function subjectOf(id: string) {
  const subject = id === 'nothing' ? NOTHING : IN_FLIGHT_SUBJECTS[id];
  if (!subject) throw new Error(`unknown in-flight subject ${id}`);
  return subject;
}

/** Garbage collections while `run` runs: how many, and their pauses (ms) in total and at the longest. */
async function collections(
  run: () => Promise<void>,
): Promise<{ gcs: number; gcMs: number; gcMaxMs: number; major: number }> {
  let gcs = 0;
  let gcMs = 0;
  let gcMaxMs = 0;
  let major = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs++;
      gcMs += e.duration;
      gcMaxMs = Math.max(gcMaxMs, e.duration);
      if ((e as { detail?: { kind?: number } }).detail?.kind !== perf.NODE_PERFORMANCE_GC_MINOR) major++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  await run();
  // GC entries are delivered by a timer, after the run's microtasks.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  return { gcs, gcMs, gcMaxMs, major };
}

/** Decisions per second, latency percentiles (us) and collections of one subject, after a warm-up. */
export async function measureInFlight(id: string): Promise<Record<string, number>> {
  const decide = subjectOf(id).make();
  await drive(decide, 200_000);
  const total = 1_000_000;
  const latencies = new Float64Array(total);
  let elapsed = 0;
  let cpuUs = 0;
  const gc = await collections(async () => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    await drive(decide, total, latencies);
    elapsed = performance.now() - started;
    const used = process.cpuUsage(cpu);
    cpuUs = used.user + used.system;
  });
  latencies.sort();
  const at = (q: number) => (latencies[Math.min(total - 1, Math.floor(total * q))] as number) * 1000;
  return {
    decisionsPerSecond: (total / elapsed) * 1000,
    // Per second of this process's CPU time (its collector's threads included): what a busy machine's
    // other processes change least.
    decisionsPerCpuSecond: (total / cpuUs) * 1e6,
    p50Us: at(0.5),
    p99Us: at(0.99),
    p999Us: at(0.999),
    maxUs: at(1),
    ...gc,
  };
}

/**
 * Heap bytes one decision allocates (the drive loop's own share included: see the `nothing` subject), in a
 * process started with a young generation large enough that no collection runs while it is counted.
 */
export async function measureAllocation(id: string): Promise<Record<string, number>> {
  const decide = subjectOf(id).make();
  await drive(decide, 200_000);
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc to measure allocation');
  const total = 100_000;
  let bytes = 0;
  g();
  const gc = await collections(async () => {
    const before = process.memoryUsage().heapUsed;
    await drive(decide, total);
    bytes = process.memoryUsage().heapUsed - before;
  });
  // A collection in between would hide what it freed: the figure is only good without one.
  return { bytesPerDecision: gc.gcs === 0 ? bytes / total : Number.NaN, gcs: gc.gcs };
}
