/**
 * How long a provider's 429 or 503 asks its callers to wait, read from the headers providers send:
 * `Retry-After` (seconds, or an HTTP date), the IETF `RateLimit` field (`reset=30` in draft 7 and
 * earlier, `t=30` in later drafts), `RateLimit-Reset` and `X-RateLimit-Reset` (seconds, or a Unix time
 * in seconds), and OpenAI's `x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens` (durations like
 * `6m0s`, `1.5s`, `20ms`; a limit whose `x-ratelimit-remaining-*` shows some left is skipped). `Retry-After` is the server's own answer and wins; otherwise the longest of the
 * others (the call has to wait for the last limit to reset).
 */

/** A Unix time in seconds is this large; a delay in seconds never is. */
const UNIX_SECONDS = 1_000_000_000;

/** A number of seconds (a non-negative decimal), in ms; undefined for anything else. */
function secondsMs(text: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(text)) return undefined;
  return Number(text) * 1_000;
}

/** `Retry-After`: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
function retryAfterMs(value: string, nowMs: number): number | undefined {
  const trimmed = value.trim();
  const seconds = secondsMs(trimmed);
  if (seconds !== undefined) return seconds;
  // An HTTP date names its day or month ('Sun, 06 Nov 1994 08:49:37 GMT'); Date.parse would read '-3' as a year.
  if (!/[A-Za-z]{3}/.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A reset given in seconds from now, or as a Unix time in seconds. */
function resetMs(value: string, nowMs: number): number | undefined {
  const ms = secondsMs(value.trim());
  if (ms === undefined) return undefined;
  return ms >= UNIX_SECONDS * 1_000 ? Math.max(0, ms - nowMs) : ms;
}

/** The `RateLimit` field: `limit=100, remaining=0, reset=30` or `"default";r=0;t=30`. */
function rateLimitFieldMs(value: string): number | undefined {
  let longest: number | undefined;
  for (const match of value.matchAll(/(?:^|[;,\s])(?:reset|t)=(\d+(?:\.\d+)?)/g)) {
    const ms = Number(match[1]) * 1_000;
    longest = longest === undefined ? ms : Math.max(longest, ms);
  }
  return longest;
}

const DURATION_UNITS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** A Go-style duration as OpenAI sends it: `6m0s`, `1.5s`, `20ms`, `1h2m`. */
function durationMs(value: string): number | undefined {
  const text = value.trim();
  if (!/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(text)) return undefined;
  let total = 0;
  for (const match of text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s)/g)) {
    total += Number(match[1]) * (DURATION_UNITS[match[2] as string] as number);
  }
  return total;
}

/**
 * How long the response's headers ask to wait, in ms; undefined when they say nothing readable.
 * @example
 * retryDelayMs(new Headers({ 'retry-after': '2' }), Date.now())                 // 2000
 * retryDelayMs(new Headers({ 'x-ratelimit-reset-tokens': '6m0s' }), Date.now()) // 360000
 */
export function retryDelayMs(headers: Headers, nowMs: number): number | undefined {
  const retryAfter = headers.get('retry-after');
  if (retryAfter !== null) {
    const ms = retryAfterMs(retryAfter, nowMs);
    if (ms !== undefined) return ms;
  }
  const found: number[] = [];
  const add = (ms: number | undefined) => {
    if (ms !== undefined) found.push(ms);
  };
  const field = headers.get('ratelimit');
  if (field !== null) add(rateLimitFieldMs(field));
  for (const name of ['ratelimit-reset', 'x-ratelimit-reset']) {
    const value = headers.get(name);
    if (value !== null) add(resetMs(value, nowMs));
  }
  for (const limit of ['requests', 'tokens']) {
    const value = headers.get(`x-ratelimit-reset-${limit}`);
    // A limit with some left is not the one that refused: its reset is no reason to wait.
    const remaining = headers.get(`x-ratelimit-remaining-${limit}`);
    if (value !== null && (remaining === null || Number(remaining) <= 0)) add(durationMs(value));
  }
  return found.length === 0 ? undefined : Math.max(...found);
}
