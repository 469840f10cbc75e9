import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { ManualClock } from '../../foundation/clock.js';
import { createLimiter } from '../../engine/limiter.js';
import { createEvaluator } from './evaluate.js';
import { byIp, byUser } from './keys.js';
import type { RateLimitOptions } from './options.js';
import type { HttpRequestLike } from './request.js';
import { nodeRequestView } from './view.js';

// Hardening: with trustProxy, a request with no key of its own fell back to the socket address, which is the
// proxy's: every anonymous client behind the proxy shared one bucket.
describe('onMissingKey: ip reads addresses with the same proxy settings as the key', () => {
  const behindProxy = (client: string, user?: string): HttpRequestLike & { user?: string } => ({
    headers: { 'x-forwarded-for': client },
    socket: { remoteAddress: '10.0.0.1' },
    ...(user === undefined ? {} : { user }),
  });
  /** The evaluator as the node:http middleware runs it: each request with its view. */
  const evaluatorOf = (options: RateLimitOptions<HttpRequestLike & { user?: string }>) => {
    const evaluate = createEvaluator(options);
    return (req: HttpRequestLike) => evaluate(req, nodeRequestView(req));
  };
  const limiter = () =>
    createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 60_000 }), clock: new ManualClock(0) });

  it('rateLimit({ trustProxy }) applies to the fallback of a byUser key', async () => {
    const evaluate = evaluatorOf({
      limiter: limiter(),
      key: byUser((req: HttpRequestLike & { user?: string }) => req.user),
      trustProxy: 1,
    });
    expect((await evaluate(behindProxy('198.51.100.1'))).kind).toBe('allowed');
    // Another anonymous client behind the same proxy has its own bucket.
    expect((await evaluate(behindProxy('198.51.100.2'))).kind).toBe('allowed');
    expect((await evaluate(behindProxy('198.51.100.1'))).kind).toBe('limited');
  });

  it("a byIp key's own settings serve the fallback, and an unreadable entry is answered 400, never keyed by the proxy", async () => {
    const evaluate = evaluatorOf({ limiter: limiter(), key: byIp({ trustProxy: 1 }), onInvalidInput: () => {} });
    expect((await evaluate(behindProxy('198.51.100.1:50001'))).kind).toBe('allowed');
    expect((await evaluate(behindProxy('[2001:db8:1::1]:443'))).kind).toBe('allowed');
    expect((await evaluate(behindProxy('garbage'))).kind).toBe('rejected');
    expect((await evaluate(behindProxy('also garbage'))).kind).toBe('rejected');
  });
});
