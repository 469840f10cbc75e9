/**
 * A rolling deploy that changes a rule's kind under the same name: old nodes run `tokenBucket({ name: 'api' })`,
 * new ones `leakyBucket({ name: 'api' })` (or a window, a GCRA, a calendar quota), each 10 per hour, on one Redis
 * at once. A rule's state identity is its name and its state format (stateName in core), so the two versions
 * count apart and never read each other's state as their own: each admits its own limit and no more, in every
 * mode (exact, leased, divided), whatever order their requests arrive in. Before, both read and wrote one key,
 * each taking the other's state for its own: 100 of 100 alternating requests were allowed.
 *
 * The same class with one kind: a parameter that changes what the state means (a window's length, a calendar's
 * period or zone, a leaky bucket's mode) is part of the identity too; a limit or a rate is not, so a version
 * that only changes the limit shares the count (each version enforces its own limit on it).
 */
import {
  type Algorithm,
  type AlgorithmKind,
  type Clock,
  type Limiter,
  calendarWindow,
  createLimiter,
  fixedWindow,
  leakyBucket,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { stateName } from '@sluice/core/internal';
import { redisStore } from '@sluice/redis';
import { ALGORITHMS } from '@sluice/test-kit';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { type TestCluster, startTestCluster } from '../harness/redis-cluster.js';
import { type TestRedis, startTestRedis } from '../harness/redis-server.js';

const HOUR_MS = 3_600_000;
const LIMIT = 10;
/**
 * Redis decides (failMode 'closed' would count a call past the default 50 ms deadline on a loaded box as a
 * denial, and a divided node's first decisions wait for its first heartbeat within it).
 */
const DEADLINE_MS = 5_000;
/**
 * The time every version decides on: 03:30 UTC on 15 January 2026 when the file starts, running on from there
 * (09:00 in Asia/Kolkata). No hour, two-hour window, day or month ends while the tests run, whatever the time
 * of day they run at (a window's end between the paired and the lone runs changes what they admit).
 */
const startedAt = performance.now();
const PINNED: Clock = { now: () => Date.UTC(2026, 0, 15, 3, 30) + (performance.now() - startedAt) };
/** 10 per hour (a calendar day for calendarWindow), named 'api', in each kind of the registry. */
const api = (kind: AlgorithmKind): Algorithm =>
  ALGORITHMS[kind].example({ limit: LIMIT, windowMs: HOUR_MS, perSecond: LIMIT / 3600 }, { name: 'api' });
type Kind = AlgorithmKind;

let server: TestRedis;
const clients: Redis[] = [];
/** A connection of its own, as each version's process has. */
const connection = (): Redis => {
  const client = new Redis(server.url);
  clients.push(client);
  return client;
};
beforeAll(async () => {
  server = await startTestRedis();
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server?.stop();
});

let n = 0;
const freshPrefix = (mode: string) => `rolling-${mode}-${++n}`;

/**
 * Each mode's limiter of one version of the code, on a connection of its own from `open` (a standalone server
 * or a Cluster), as a node runs it.
 */
const modesOn = (open: () => Redis | Cluster) => ({
  exact: (rule: Algorithm, prefix: string): Limiter =>
    createLimiter({
      rules: rule,
      store: redisStore({ redis: open(), failMode: 'closed', timeoutMs: DEADLINE_MS, clock: PINNED }),
      prefix,
    }),
  leased: (rule: Algorithm, prefix: string): Limiter =>
    leasedLimiterOn({ rules: rule, redis: open(), prefix, failMode: 'closed', timeoutMs: DEADLINE_MS, clock: PINNED }),
  divided: (rule: Algorithm, prefix: string): Limiter =>
    dividedLimiterOn({ rules: rule, redis: open(), prefix, timeoutMs: DEADLINE_MS, clock: PINNED }),
});
const modes = modesOn(connection);
type Mode = keyof typeof modes;

/** The kinds each mode runs (leased and divided mode take buckets and windows). */
const PAIRS: Record<Mode, ReadonlyArray<[Kind, Kind]>> = {
  exact: [
    ['tokenBucket', 'leakyBucket'],
    ['tokenBucket', 'slidingWindowLog'],
    ['tokenBucket', 'calendarWindow'],
    ['fixedWindow', 'slidingWindowCounter'],
    ['gcra', 'tokenBucket'],
  ],
  leased: [
    ['tokenBucket', 'gcra'],
    ['tokenBucket', 'fixedWindow'],
    ['tokenBucket', 'calendarWindow'],
    ['fixedWindow', 'slidingWindowCounter'],
  ],
  divided: [
    ['tokenBucket', 'gcra'],
    ['tokenBucket', 'fixedWindow'],
    ['tokenBucket', 'calendarWindow'],
    ['fixedWindow', 'slidingWindowCounter'],
  ],
};

/** 100 requests for one key, alternating between the two versions: what each version allowed. */
async function alternate(older: Limiter, newer: Limiter, key: string): Promise<[number, number]> {
  let fromOld = 0;
  let fromNew = 0;
  for (let i = 0; i < 50; i++) {
    if ((await older.tryAcquire(key)).allowed) fromOld++;
    if ((await newer.tryAcquire(key)).allowed) fromNew++;
  }
  return [fromOld, fromNew];
}

it('every version decides on the pinned clock: an hour window opened at 03:30 ends in 30 minutes', async () => {
  const limiter = modes.exact(fixedWindow({ name: 'api', limit: LIMIT, windowMs: HOUR_MS }), freshPrefix('pinned'));
  try {
    const decision = await limiter.tryAcquire('user:1');
    expect(decision.resetAfterMs).toBeLessThanOrEqual(HOUR_MS / 2);
    expect(decision.resetAfterMs).toBeGreaterThan(HOUR_MS / 2 - 60_000);
  } finally {
    await limiter.close();
  }
});

describe.each(Object.keys(modes) as Mode[])('%s mode: two versions with different kinds under one name', (mode) => {
  it.each(PAIRS[mode])('old %s, new %s: each version admits its own limit, never the other’s state', async (a, b) => {
    const prefix = freshPrefix(mode);
    const older = modes[mode](api(a), prefix);
    const newer = modes[mode](api(b), prefix);
    try {
      await Promise.all([older.ready(), newer.ready()]);
      const [fromOld, fromNew] = await alternate(older, newer, 'user:1');
      // Each version counts in its own state: neither exceeds its limit, and neither is held back by the
      // other's requests (a divided node may hold less than the whole limit while it learns the fleet).
      expect({ fromOld, fromNew }).toEqual({
        fromOld: mode === 'divided' ? expect.any(Number) : LIMIT,
        fromNew: mode === 'divided' ? expect.any(Number) : LIMIT,
      });
      expect(fromOld).toBeLessThanOrEqual(LIMIT);
      expect(fromNew).toBeLessThanOrEqual(LIMIT);
      expect(fromOld).toBeGreaterThan(0);
      expect(fromNew).toBeGreaterThan(0);
    } finally {
      await Promise.all([older.close(), newer.close()]);
    }
  });
});

describe('on a Redis Cluster: two versions with different kinds under one name, in every mode', () => {
  let cluster: TestCluster;
  const opened: Array<{ disconnect(): void }> = [];
  beforeAll(async () => {
    cluster = await startTestCluster({ replicas: 0 });
  });
  afterAll(async () => {
    for (const client of opened) client.disconnect();
    await cluster?.stop();
  });
  /** A Cluster client of its own, as each version's process has. */
  const clusterClient = () => {
    const client = cluster.client();
    opened.push(client);
    return client;
  };
  const onCluster = modesOn(clusterClient);
  it.each(Object.keys(onCluster) as Mode[])('%s mode: old tokenBucket, new calendarWindow', async (mode) => {
    const prefix = freshPrefix(`cluster-${mode}`);
    const older = onCluster[mode](api('tokenBucket'), prefix);
    const newer = onCluster[mode](api('calendarWindow'), prefix);
    try {
      await Promise.all([older.ready(), newer.ready()]);
      const [fromOld, fromNew] = await alternate(older, newer, 'user:1');
      if (mode !== 'divided') expect({ fromOld, fromNew }).toEqual({ fromOld: LIMIT, fromNew: LIMIT });
      expect(fromOld).toBeLessThanOrEqual(LIMIT);
      expect(fromNew).toBeLessThanOrEqual(LIMIT);
      expect(Math.min(fromOld, fromNew)).toBeGreaterThan(0);
    } finally {
      await Promise.all([older.close(), newer.close()]);
    }
  });
});

describe('one kind, a parameter that changes what the state means', () => {
  /**
   * Pairs of versions whose states mean different things: they count apart. Windows of hours and a pinned
   * clock, so that no window ends while the test runs.
   */
  const apart: ReadonlyArray<[string, Algorithm, Algorithm]> = [
    [
      'a calendar day and a calendar month',
      calendarWindow({ name: 'api', limit: LIMIT, period: 'day' }),
      calendarWindow({ name: 'api', limit: LIMIT, period: 'month' }),
    ],
    [
      'a calendar day in UTC and in Asia/Kolkata',
      calendarWindow({ name: 'api', limit: LIMIT, period: 'day' }),
      calendarWindow({ name: 'api', limit: LIMIT, period: 'day', timeZone: 'Asia/Kolkata' }),
    ],
    [
      'a one-hour and a two-hour fixed window',
      fixedWindow({ name: 'api', limit: LIMIT, windowMs: HOUR_MS }),
      fixedWindow({ name: 'api', limit: LIMIT, windowMs: 2 * HOUR_MS }),
    ],
    [
      'a one-hour and a two-hour sliding log',
      slidingWindowLog({ name: 'api', limit: LIMIT, windowMs: HOUR_MS }),
      slidingWindowLog({ name: 'api', limit: LIMIT, windowMs: 2 * HOUR_MS }),
    ],
    [
      'a policing and a shaping leaky bucket',
      leakyBucket({ name: 'api', capacity: LIMIT, leakPerSecond: LIMIT / 3600 }),
      leakyBucket({ name: 'api', capacity: LIMIT, leakPerSecond: LIMIT / 3600, mode: 'shape' }),
    ],
  ];
  it.each(apart)('%s: two states, each version admits what it admits alone (exact mode)', async (_, a, b) => {
    expect(stateName(a)).not.toBe(stateName(b));
    /** What `rule` admits of 50 requests with nothing else running. */
    const alone = async (rule: Algorithm): Promise<number> => {
      const limiter = modes.exact(rule, freshPrefix('alone'));
      let allowed = 0;
      for (let i = 0; i < 50; i++) if ((await limiter.tryAcquire('user:1')).allowed) allowed++;
      await limiter.close();
      return allowed;
    };
    const prefix = freshPrefix('meaning');
    const older = modes.exact(a, prefix);
    const newer = modes.exact(b, prefix);
    try {
      const [fromOld, fromNew] = await alternate(older, newer, 'user:1');
      expect({ fromOld, fromNew }).toEqual({ fromOld: await alone(a), fromNew: await alone(b) });
    } finally {
      await Promise.all([older.close(), newer.close()]);
    }
  });

  it('a version that only changes the limit (or the rate) shares the count: the fleet never admits more than the larger limit', async () => {
    const a = tokenBucket({ name: 'api', capacity: LIMIT, refillPerSecond: LIMIT / 3600 });
    const b = tokenBucket({ name: 'api', capacity: 2 * LIMIT, refillPerSecond: (2 * LIMIT) / 7200 });
    expect(stateName(a)).toBe(stateName(b));
    const prefix = freshPrefix('limit');
    const older = modes.exact(a, prefix);
    const newer = modes.exact(b, prefix);
    try {
      const [fromOld, fromNew] = await alternate(older, newer, 'user:1');
      // One bucket, begun full at the capacity of the version that touched it first: 10 in all, where two
      // states would have admitted 30.
      expect(fromOld + fromNew).toBe(LIMIT);
    } finally {
      await Promise.all([older.close(), newer.close()]);
    }
  });
});
