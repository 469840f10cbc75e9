/**
 * The seed's demo controller on Express, limited by sluice's middleware.
 */
import { type Clock, type Store, memoryStore } from '@sluice/core';
import { byIp, byRoute, byUser, rateLimit, rateLimitHeaders } from '@sluice/core/http';
import express, { type Express, type Request } from 'express';
import { type DemoLimiters, demoLimiters } from './limiters.js';

export interface DemoApp {
  readonly app: Express;
  readonly limiters: DemoLimiters;
  close(): Promise<void>;
}

/** The `key` query parameter, when there is one. */
const queryKey = (req: Request): string | undefined => {
  const key = req.query.key;
  return typeof key === 'string' && key !== '' ? `key:${key}` : undefined;
};

/** A stand-in for your authentication: the user id a gateway put in `X-User-Id`. */
const userId = (req: Request): string | undefined => req.header('x-user-id') || undefined;

export function createDemoApp(options: { store?: Store; clock?: Clock } = {}): DemoApp {
  const store = options.store ?? memoryStore(options.clock === undefined ? {} : { clock: options.clock });
  const limiters = demoLimiters(store, options.clock);
  const app = express();

  app.get('/limiter/count', rateLimit({ limiter: limiters.count, key: queryKey }), (req, res) => {
    res.json({ ok: true, key: req.query.key ?? null });
  });

  app.get('/limiter/rate', rateLimit({ limiter: limiters.rate, key: byRoute() }), (_req, res) => {
    res.json({ ok: true });
  });

  // A limiter used from the handler's own code, without the middleware.
  app.get('/limiter/rate2', async (_req, res, next) => {
    try {
      const decision = await limiters.rate2.tryAcquire('rate2');
      for (const [name, value] of rateLimitHeaders(decision, limiters.rate2.rules, 'draft-8'))
        res.setHeader(name, value);
      if (decision.allowed) res.json({ ok: true });
      else res.status(429).json({ error: 'Too Many Requests', retryAfterMs: Math.ceil(decision.retryAfterMs) });
    } catch (error) {
      next(error);
    }
  });

  // Per user when signed in; an anonymous request is limited by its address (onMissingKey: 'ip').
  app.use('/api', rateLimit({ limiter: limiters.api, key: byUser(userId) }));
  app.get('/api/orders', (req, res) => {
    res.json({ orders: [], user: userId(req) ?? null, ip: byIp()(req) });
  });

  return {
    app,
    limiters,
    async close() {
      await limiters.close();
      await store.close();
    },
  };
}
