/**
 * One worker process of the llm-client example: CONCURRENCY loops that each send chat calls to the provider
 * at PROVIDER_URL for SECONDS, through one throttle whose rules are REQUESTS requests and TOKENS tokens per
 * WINDOW_MS, shared on Redis (REDIS_URL, PREFIX) with the other workers. Each call is charged its estimate
 * (the prompt and max_tokens) and settled to what the provider says it used. Prints one JSON line a second
 * (`tick`: calls sent and refused by the provider so far, calls queued now) and one at the end (`done`,
 * with how many calls the store's fail mode admitted because Redis did not answer in time).
 */
import { createLimiter, throttle, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const env = process.env;
const windowMs = Number(env.WINDOW_MS);
const redis = new Redis(env.REDIS_URL as string);
const store = redisStore({ redis });
/**
 * The provider counts a call when it arrives, the throttle when it grants it, a few ms earlier: while the
 * provider's bucket is full it loses those ms of refill, so a throttle with exactly its numbers can run
 * ahead of it by the refill of the send delay (one full bucket's start is enough). HEADROOM_MS of refill
 * off each bucket's capacity covers a send delay up to that long; the refill rate is the provider's own.
 */
const HEADROOM_MS = 100;
const bucket = (name: string, limit: number) =>
  tokenBucket({
    name,
    capacity: limit - Math.ceil((limit * HEADROOM_MS) / windowMs),
    refillPerSecond: (limit * 1000) / windowMs,
  });
// Both limits as the provider keeps them: buckets of a window's worth, refilled continuously.
const limiter = createLimiter({
  rules: [bucket('rpm', Number(env.REQUESTS)), bucket('tpm', Number(env.TOKENS))],
  store,
  prefix: env.PREFIX as string,
});
const llm = throttle({ limiter, key: 'provider' });
await limiter.ready();

let sent = 0;
let refused = 0;
let fallback = 0;
const endAt = Date.now() + Number(env.SECONDS) * 1000;

/** One caller: a chat call after another until the time is up. */
async function caller(): Promise<void> {
  while (Date.now() < endAt) {
    const prompt = 100 + Math.floor(Math.random() * 200);
    const max = 200;
    const response = await llm.fetch(`${env.PROVIDER_URL}/v1/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt_tokens: prompt, max_tokens: max }),
      throttle: {
        // The most the call can use, settled to what it used once the provider says.
        permits: { rpm: 1, tpm: prompt + max },
        async onResponse(answer, ticket) {
          if (ticket.decision.source === 'fallback') fallback++;
          if (answer.status === 429) {
            refused++;
            // The provider counted nothing: neither do we.
            await ticket.settle({ rpm: 0, tpm: 0 });
            return;
          }
          sent++;
          const { usage } = (await answer.clone().json()) as { usage: { total_tokens: number } };
          await ticket.settle({ tpm: usage.total_tokens });
        },
      },
    });
    await response.arrayBuffer();
  }
}

const tick = setInterval(() => {
  console.log(JSON.stringify({ type: 'tick', sent, refused, queued: llm.queued() }));
}, 1_000);
await Promise.all(Array.from({ length: Number(env.CONCURRENCY) }, caller));
clearInterval(tick);
console.log(JSON.stringify({ type: 'done', sent, refused, fallback }));
await llm.close();
await limiter.close();
await store.close();
redis.disconnect();
