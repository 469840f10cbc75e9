/**
 * A fake LLM provider: an HTTP server with its own limits, as a provider enforces them, to point a throttled
 * client at. POST /v1/chat with `{ "prompt_tokens": n, "max_tokens": m }` is charged one request and n + m
 * tokens as it arrives (the most the call can use, as providers reserve it), answered after `latencyMs`
 * with `usage.total_tokens` (the prompt and a completion of up to m), and the tokens it did not use are
 * given back then. Past either limit it answers 429 with `Retry-After` (whole seconds) and OpenAI-style
 * `x-ratelimit-*` headers, and counts nothing. Both limits are token buckets that start full: `requests`
 * and `tokens` per `windowMs`, refilled continuously.
 */
import { type Server, createServer } from 'node:http';

export interface ProviderLimits {
  /** Requests per window. */
  readonly requests: number;
  /** Tokens per window. */
  readonly tokens: number;
  readonly windowMs: number;
  /** How long a call takes, at random between the two. */
  readonly latencyMs: readonly [number, number];
}

/** What the provider saw: calls it served and refused, and what they used. */
export interface ProviderStats {
  readonly served: number;
  readonly refused: number;
  /** Tokens the served calls used (after what they did not use was given back). */
  readonly tokens: number;
  /** From the first call's arrival to the last served call's, ms (0 before one was served). */
  readonly elapsedMs: number;
}

/** A continuously refilled bucket: `capacity` per `windowMs`, starting full. */
class Bucket {
  #level: number;
  #at: number;
  constructor(
    private readonly capacity: number,
    private readonly windowMs: number,
    now: number,
  ) {
    this.#level = capacity;
    this.#at = now;
  }

  level(now: number): number {
    this.#level = Math.min(this.capacity, this.#level + ((now - this.#at) * this.capacity) / this.windowMs);
    this.#at = now;
    return this.#level;
  }

  /** Ms until `n` are there. */
  waitFor(n: number, now: number): number {
    return (Math.max(0, n - this.level(now)) * this.windowMs) / this.capacity;
  }

  take(n: number, now: number): void {
    this.#level = this.level(now) - n;
  }

  giveBack(n: number, now: number): void {
    this.#level = Math.min(this.capacity, this.level(now) + n);
  }
}

/** "1.5s", "6m0s": OpenAI's way of writing a reset. */
const duration = (ms: number): string => `${Math.ceil(ms)}ms`;

/**
 * Starts the provider on a free port of 127.0.0.1.
 * @example
 * const provider = await startProvider({ requests: 600, tokens: 60_000, windowMs: 60_000, latencyMs: [20, 60] })
 * // POST `${provider.url}/v1/chat`; provider.stats() is what it served and refused
 */
export async function startProvider(limits: ProviderLimits): Promise<{
  url: string;
  stats: () => ProviderStats;
  close: () => Promise<void>;
}> {
  const now = () => performance.now();
  let firstAt: number | undefined;
  let lastAt = 0;
  const requests = new Bucket(limits.requests, limits.windowMs, now());
  const tokens = new Bucket(limits.tokens, limits.windowMs, now());
  let served = 0;
  let refused = 0;
  let used = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      let ask: { prompt_tokens?: unknown; max_tokens?: unknown };
      try {
        ask = JSON.parse(body) as typeof ask;
      } catch {
        res.writeHead(400).end('{"error":"not JSON"}');
        return;
      }
      const prompt = Number(ask.prompt_tokens);
      const max = Number(ask.max_tokens);
      if (req.url !== '/v1/chat' || !(prompt >= 0) || !(max >= 0)) {
        res.writeHead(400).end('{"error":"POST /v1/chat { prompt_tokens, max_tokens }"}');
        return;
      }
      const at = now();
      firstAt ??= at;
      const reserved = prompt + max;
      const waitMs = Math.max(requests.waitFor(1, at), tokens.waitFor(reserved, at));
      if (waitMs > 0) {
        refused++;
        res.writeHead(429, {
          'content-type': 'application/json',
          'retry-after': String(Math.ceil(waitMs / 1000)),
          'x-ratelimit-remaining-requests': String(Math.floor(requests.level(at))),
          'x-ratelimit-remaining-tokens': String(Math.floor(tokens.level(at))),
          'x-ratelimit-reset-requests': duration(requests.waitFor(1, at)),
          'x-ratelimit-reset-tokens': duration(tokens.waitFor(reserved, at)),
        });
        res.end('{"error":"rate limit reached"}');
        return;
      }
      requests.take(1, at);
      tokens.take(reserved, at);
      lastAt = at;
      const [least, most] = limits.latencyMs;
      setTimeout(
        () => {
          const completion = Math.floor(Math.random() * (max + 1));
          const total = prompt + completion;
          tokens.giveBack(reserved - total, now());
          served++;
          used += total;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total } }),
          );
        },
        least + Math.random() * (most - least),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the provider has no address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    stats: () => ({ served, refused, tokens: used, elapsedMs: firstAt === undefined ? 0 : lastAt - firstAt }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
