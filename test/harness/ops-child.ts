/**
 * One process of the operations tests (see ops-process.ts): a limiter of LIMIT per hour (fixedWindow 'api')
 * on a redisStore at REDIS_URL under PREFIX, its admin router served on a free port (authorization: Bearer
 * ADMIN_TOKEN). Prints `{"ready":true,"admin":"http://..."}`, then answers one JSON line per JSON command:
 * - {"decide": key, "count": n}: n decisions, one at a time -> {"granted": g, "denied": d}
 * - {"try": key, "address"?: client address}: one decision -> the decision
 * - {"peek": key}: peek -> the decision
 * - {"flush": true}: the limited-keys counts sent to Redis -> {"flushed": true}
 * - {"top": n}: topLimited(n) with clear keys -> {"top": [...]}
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { createLimiter, fixedWindow } from '@sluice/core';
import { adminRouter, nodeAdminHandler } from '@sluice/core/admin';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const env = process.env;
const redis = new Redis(env.REDIS_URL as string);
const store = redisStore({ redis, timeoutMs: 2_000 });
const limiter = createLimiter({
  rules: fixedWindow({ name: 'api', limit: Number(env.LIMIT ?? 5), windowMs: 3_600_000 }),
  store,
  prefix: env.PREFIX as string,
  limitedKeys: { clearKeys: true },
});
await limiter.ready();
const admin = nodeAdminHandler(
  adminRouter({
    limiters: [limiter],
    authorize: (request) => request.headers.get('authorization') === `Bearer ${env.ADMIN_TOKEN}`,
  }),
);
const server = createServer((req, res) => void admin(req, res));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const reply = (value: unknown) => console.log(JSON.stringify(value, (_k, v) => (v === Infinity ? null : v)));
reply({ ready: true, admin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });

for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as Record<string, unknown>;
  if (typeof command.decide === 'string') {
    let granted = 0;
    for (let i = 0; i < Number(command.count); i++) if ((await limiter.tryAcquire(command.decide)).allowed) granted++;
    reply({ granted, denied: Number(command.count) - granted });
  } else if (typeof command.try === 'string') {
    const address = typeof command.address === 'string' ? { address: command.address } : {};
    reply(await limiter.tryAcquire(command.try, address));
  } else if (typeof command.peek === 'string') reply(await limiter.peek(command.peek));
  else if (command.flush === true) {
    await limiter.flushLimitedKeys();
    reply({ flushed: true });
  } else if (typeof command.top === 'number') reply({ top: await limiter.topLimited(command.top) });
  else break;
}
server.close();
await limiter.close();
await store.close();
redis.disconnect();
