/**
 * The memory store as a server drives it: 128 decisions in flight at once, each an awaited promise (one per
 * request, as an HTTP server's handlers await theirs), over 10,000 keys asked in a fixed random order. What a
 * sequential loop hides shows here: the promises and closures each decision allocates, the garbage they make,
 * and the pauses that collecting it puts in the tail. Reported per subject: decisions per second and the
 * latency of a decision from its call to its await's return, p50, p99 and p99.9.
 */
import { createLimiter, fixedWindow, memoryStore, tokenBucket } from '@sluice/core';
import { RateLimiterMemory } from 'rate-limiter-flexible';

export const IN_FLIGHT = 128;
const KEYS = 10_000;
const HUGE = 1_000_000_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

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

/** Decisions per second and latency percentiles (us) of one subject, after a warm-up. */
export async function measureInFlight(id: string): Promise<Record<string, number>> {
  const subject = IN_FLIGHT_SUBJECTS[id];
  if (!subject) throw new Error(`unknown in-flight subject ${id}`);
  const decide = subject.make();
  await drive(decide, 200_000);
  const total = 1_000_000;
  const latencies = new Float64Array(total);
  const started = performance.now();
  await drive(decide, total, latencies);
  const elapsed = performance.now() - started;
  latencies.sort();
  const at = (q: number) => (latencies[Math.min(total - 1, Math.floor(total * q))] as number) * 1000;
  return { decisionsPerSecond: (total / elapsed) * 1000, p50Us: at(0.5), p99Us: at(0.99), p999Us: at(0.999) };
}
