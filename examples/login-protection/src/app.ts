/**
 * Login brute-force protection, as a service would write it: 5 failed logins per 15 minutes per user and
 * client address, then an hour's ban. Only failures count (skipSuccessfulRequests), and a correct password
 * clears what failed before it. The same app runs on one process (memory store) or a fleet (redisStore).
 */
import { type Clock, type Limiter, type Store, createLimiter, fixedWindow } from '@sluice/core';
import { byIp, rateLimit } from '@sluice/core/http';
import express, { type Express, type Request } from 'express';

export interface LoginAppOptions {
  /** Where failed logins are counted: a memoryStore() for one process, a redisStore() for a fleet. */
  store: Store;
  /** The limiter's clock (a ManualClock in tests): it must be the store's. */
  clock?: Clock;
}

/** A user of this demo and her password, for trying it (main.ts prints curl lines with it). */
export const DEMO_LOGIN = { username: 'alice', password: 'wonderland' } as const;

/** The users this demo knows, and their passwords (a real service checks a hash). */
const USERS: Readonly<Record<string, string>> = { [DEMO_LOGIN.username]: DEMO_LOGIN.password, bob: 'builder' };

/** The client's address: behind one proxy of ours (a load balancer), the last hop it appended. */
const clientAddress = byIp({ trustProxy: 1 });

export function loginApp({ store, clock }: LoginAppOptions): { app: Express; limiter: Limiter } {
  const limiter = createLimiter({
    // 5 failures per 15-minute window; the failure that finds the window full starts an hour's ban.
    rules: fixedWindow({ limit: 5, windowMs: 15 * 60_000, blockMs: 60 * 60_000, name: 'failed-logins' }),
    store,
    prefix: 'login',
    ...(clock === undefined ? {} : { clock }),
  });
  // The key: who is being tried, from where. Another address may still try the same user (its own 5), and
  // this address other users; add a per-address rule of its own to stop one address spraying many users.
  const keyOf = (req: Request) => {
    const user = typeof req.body?.username === 'string' ? req.body.username.toLowerCase() : undefined;
    const ip = clientAddress(req);
    return user === undefined || ip === undefined ? undefined : `${user}|${ip}`;
  };

  const app = express();
  app.use(express.json());
  app.post(
    '/login',
    // No username: 400 (onMissingKey 'reject'), never one shared bucket.
    rateLimit({ limiter, key: keyOf, onMissingKey: 'reject', skipSuccessfulRequests: true }),
    async (req, res) => {
      const { username, password } = req.body as { username: string; password?: unknown };
      if (USERS[username.toLowerCase()] !== password) {
        res.status(401).json({ error: 'wrong username or password' });
        return;
      }
      // A correct password clears the failures before it: the limit is on consecutive failures.
      await limiter.reset(keyOf(req) as string);
      res.json({ welcome: username });
    },
  );
  return { app, limiter };
}
