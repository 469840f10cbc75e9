/**
 * sluice in one process, no Redis: what `npm run demo` shows.
 *   1. Guava-style pacing: RateLimiter.create(5) spaces permits 200 ms apart, and prepays.
 *   2. Warm-up: a cold limiter starts slow and reaches its stable rate.
 *   3. A keyed limiter: a token bucket per user, with the Decision a caller gets back.
 *   4. The API policy (200 / 10 s, 5,000 / h, 20,000 / day per user), simulated over a day on a ManualClock.
 */
import { ManualClock, RateLimiter, createLimiter, fixedWindow, tokenBucket } from '@sluice/core';

const ms = (n: number) => `${n.toFixed(0).padStart(4)} ms`;

async function pacing(): Promise<void> {
  console.log('\n1. RateLimiter.create(5): permits 200 ms apart; the first is free, the next pays for it');
  const limiter = RateLimiter.create(5);
  const start = performance.now();
  for (let i = 1; i <= 5; i++) {
    const waited = await limiter.acquire();
    console.log(`   acquire #${i}: waited ${ms(waited)}   (t = ${ms(performance.now() - start)})`);
  }
  console.log(
    `   tryAcquire() right now: ${limiter.tryAcquire()}   tryAcquireWithin(250): ` +
      `${await limiter.tryAcquireWithin(250)}`,
  );
}

async function warmup(): Promise<void> {
  console.log('\n2. RateLimiter.create(10, { warmupMs: 1000 }): a cold limiter speeds up to 10/s');
  const limiter = RateLimiter.create(10, { warmupMs: 1000 });
  const waits: string[] = [];
  for (let i = 0; i < 12; i++) waits.push(`${(await limiter.acquire()).toFixed(0)}`);
  console.log(`   waits (ms): ${waits.join(', ')}`);
}

async function keyed(): Promise<void> {
  console.log('\n3. createLimiter(tokenBucket({ capacity: 3, refillPerSecond: 1 })): per-user decisions');
  const limiter = createLimiter({ rules: tokenBucket({ capacity: 3, refillPerSecond: 1 }) });
  for (const user of ['alice', 'alice', 'alice', 'alice', 'bob']) {
    const d = await limiter.tryAcquire(`user:${user}`);
    console.log(
      `   ${user.padEnd(6)} ${d.allowed ? 'allowed' : 'DENIED '}  remaining=${d.remaining}  ` +
        `retryAfter=${ms(d.retryAfterMs)}`,
    );
  }
  const d = await limiter.tryAcquire('user:alice', { maxWaitMs: 1500 });
  console.log(
    `   alice, willing to wait 1.5 s: ${d.allowed ? 'allowed' : 'denied'} after waiting for a refill ` +
      `(reservation ${ms(d.waitMs)})`,
  );
  await limiter.close();
}

async function policy(): Promise<void> {
  console.log('\n4. The API policy per user: 200 / 10 s AND 5,000 / h AND 20,000 / day (simulated day, ManualClock)');
  const clock = new ManualClock(0);
  const limiter = createLimiter({
    rules: [
      fixedWindow({ limit: 200, windowMs: 10_000, name: 'burst' }),
      fixedWindow({ limit: 5_000, windowMs: 3_600_000, name: 'hour' }),
      fixedWindow({ limit: 20_000, windowMs: 86_400_000, name: 'day' }),
    ],
    clock,
  });
  // A greedy client: 50 requests every second for a whole day.
  const deniedBy = new Map<string, number>();
  let allowed = 0;
  for (let second = 0; second < 86_400; second++) {
    for (let i = 0; i < 50; i++) {
      const d = await limiter.tryAcquire('user:greedy');
      if (d.allowed) allowed++;
      else deniedBy.set(d.rule, (deniedBy.get(d.rule) ?? 0) + 1);
    }
    clock.advance(1000);
  }
  console.log(`   4,320,000 requests -> ${allowed.toLocaleString('en')} allowed (the day's 20,000 and not one more)`);
  console.log(`   denied by: ${[...deniedBy].map(([rule, n]) => `${rule} ${n.toLocaleString('en')}`).join(', ')}`);
}

await pacing();
await warmup();
await keyed();
await policy();
console.log('\nNext: npm test runs the whole suite. See README.md for the API.');
