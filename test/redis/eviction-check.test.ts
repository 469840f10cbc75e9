/**
 * A Redis that evicts (maxmemory with allkeys-lru, as a cache Redis runs) drops limiter state silently: a
 * probe saw 4,383 of 5,000 fixedWindow keys (1 per 10 min) allowed a second time after 20 MB of other data
 * went into an 8 MB Redis. The start-up check reads the policy (INFO memory) and warns, once, with a code; a
 * Redis that will not evict says nothing, and a user who may not run INFO is skipped quietly. Warnings are
 * once per process: the quiet cases run first.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { evicts } from '../../packages/redis/src/config-checks.js';
import { aclWithout } from '../harness/acl.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';

const warnings: { code?: string; message: string }[] = [];
const onWarning = (w: Error & { code?: string }) => warnings.push({ code: w.code, message: w.message });
process.on('warning', onWarning);
afterAll(() => {
  process.off('warning', onWarning);
});
const servers: TestRedis[] = [];
const clients: Redis[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const s of servers.splice(0)) await s.stop();
});
const settle = () => new Promise((r) => setImmediate(r));

async function readyOn(args: string[], user?: { name: string; acl: string[] }): Promise<void> {
  const server = await spawnRedisServer(args);
  servers.push(server);
  let options = {};
  if (user !== undefined) {
    const admin = new Redis(server.url);
    clients.push(admin);
    await admin.call('ACL', 'SETUSER', user.name, '>secret', ...user.acl);
    options = { username: user.name, password: 'secret' };
  }
  const client = new Redis(server.url, options);
  clients.push(client);
  const store = redisStore({ redis: client });
  const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 600_000 }), store, prefix: 'sluice' });
  await store.ready();
  await settle();
  await limiter.close();
  await store.close();
}

const evicting = () => warnings.filter((w) => w.code === 'SLUICE_EVICTING_REDIS');

describe('the eviction check at start-up', () => {
  it('says nothing for noeviction, or for a Redis with no memory limit', async () => {
    await readyOn(['--maxmemory', '8mb', '--maxmemory-policy', 'noeviction']);
    await readyOn(['--maxmemory-policy', 'allkeys-lru']);
    expect(evicting()).toHaveLength(0);
  });

  it('is skipped quietly for a user the ACL denies INFO', async () => {
    const acl = aclWithout('+info');
    await readyOn(['--maxmemory', '8mb', '--maxmemory-policy', 'allkeys-lru'], { name: 'no-info', acl });
    expect(evicting()).toHaveLength(0);
  });

  it('warns, with a code and a full sentence before its advice, for a Redis that may evict limiter keys', async () => {
    await readyOn(['--maxmemory', '8mb', '--maxmemory-policy', 'allkeys-lru']);
    expect(evicting()).toHaveLength(1);
    expect(evicting()[0]?.message).toMatch(
      /runs maxmemory-policy allkeys-lru with maxmemory 8388608: .* starts over with a full limit\. Run limiters on a Redis with maxmemory-policy noeviction/,
    );
  });

  it('counts every policy but noeviction as evicting once a memory limit is set (sluice keys all have TTLs)', () => {
    for (const policy of [
      'allkeys-lru',
      'allkeys-lfu',
      'allkeys-random',
      'volatile-lru',
      'volatile-lfu',
      'volatile-random',
      'volatile-ttl',
    ])
      expect(evicts({ policy, maxmemory: 1 })).toBe(true);
    expect(evicts({ policy: 'noeviction', maxmemory: 1 })).toBe(false);
    expect(evicts({ policy: 'allkeys-lru', maxmemory: 0 })).toBe(false);
  });
});
