/**
 * Each client library's own types are accepted as they are, with no cast: what a user writes type-checks
 * (`npm test` runs tsc over this file; the calls never run).
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { redisStore } from '@sluice/redis';
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { Cluster, Redis } from 'ioredis';
import { Cluster as Ioredis5Cluster, Redis as Ioredis5 } from 'ioredis5';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';
import { expect, it } from 'vitest';

async function everyClientTypeChecks(): Promise<void> {
  const algorithm = fixedWindow({ limit: 10, windowMs: 1_000 });
  redisStore({ redis: new Redis() });
  redisStore({ redis: new Cluster([]) });
  redisStore({ redis: new Ioredis5() });
  redisStore({ redis: new Ioredis5Cluster([]) });
  redisStore({ redis: new Iovalkey() });
  redisStore({ redis: new IovalkeyCluster([]) });
  redisStore({ redis: await createClient().connect() });
  redisStore({ redis: await createCluster({ rootNodes: [] }).connect() });
  redisStore({ redis: await createClient5().connect() });
  redisStore({ redis: await createCluster5({ rootNodes: [] }).connect() });
  redisStore({ redis: await GlideClient.createClient({ addresses: [] }) });
  redisStore({ redis: await GlideClusterClient.createClient({ addresses: [] }) });
  leasedLimiterOn({ rules: algorithm, redis: await createClient().connect() });
  dividedLimiterOn({ rules: algorithm, redis: await GlideClient.createClient({ addresses: [] }) });
  createLimiter({ rules: algorithm, store: redisStore({ redis: new Iovalkey() }) });
}

it('every supported client type is accepted without a cast (checked by tsc)', () => {
  expect(typeof everyClientTypeChecks).toBe('function');
});
