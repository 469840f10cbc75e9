/**
 * postgresStore, exact mode on PostgreSQL: the same decisions as the memory store (the differential suites of
 * Redis, run on PostgreSQL), a policy all or nothing, the controls heard by another node, one limit shared by
 * two stores on two pools, live limits across stores, the fail mode with PostgreSQL unreachable, its
 * connections killed under traffic, and what it refuses.
 */
import {
  type Decision,
  ManualClock,
  SluiceError,
  concurrencyLimiter,
  createLimiter,
  fixedWindow,
  tokenBucket,
} from '@sluice/core';
import { type PostgresStore, postgresStore } from '@sluice/postgres';
import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { nextEvent, untilAsync } from '../harness/events.js';
import { freePort } from '../harness/free-port.js';
import { useTestDatabase } from '../harness/use-postgres.js';
import { startArb, timelineArb } from '../redis/arbitraries.js';
import {
  FOUND_CONTROL_CASES,
  controlTimelineArb,
  controlsBoth,
  expectSameOutcomes,
  limiterSpecArb,
  sameOutcome,
} from '../redis/controls.js';
import { type CentralStore, DECISION_CASES, decideBoth, expectSameDecisions } from '../redis/differential.js';
import { TOLERANCE_MS } from '../../packages/core/src/algorithms/algorithm.js';

const db = useTestDatabase();

/** postgresStore on one pool of the suite's database, made per timeline as the differential suites make stores. */
function onPostgres(pool: () => pg.Pool): CentralStore {
  return ({ clock, denyCache }) => postgresStore({ pool: pool(), clock, timeoutMs: 5_000, denyCache });
}

let sharedPool: pg.Pool | undefined;
const central = onPostgres(() => (sharedPool ??= db().pool({ max: 8 })));

/** As many runs as on Redis unless FC_RUNS says. */
const runs = (redisRuns: number) => Number(process.env.FC_RUNS ?? redisRuns);
const replay = () =>
  process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true } : {};

let prefixes = 0;
const prefix = () => `pgs${++prefixes}`;

const granted = (decisions: readonly Decision[]) => decisions.filter((d) => d.allowed).length;

for (const denyCache of [false, true]) {
  const tolerance = denyCache ? TOLERANCE_MS : 0;
  describe(`memory and PostgreSQL decide identically (ManualClock, deny cache ${denyCache ? 'on: times to 1 us' : 'off: bit for bit'})`, () => {
    for (const [name, rulesArb, numRuns] of DECISION_CASES) {
      it(name, async () => {
        await fc.assert(
          fc.asyncProperty(rulesArb, startArb, timelineArb, async (rules, start, steps) => {
            const { memory, redis: onPg } = await decideBoth(central, rules, start, steps, denyCache);
            expectSameDecisions(onPg, memory, start, steps, tolerance);
          }),
          { numRuns: runs(numRuns), ...replay() },
        );
      });
    }

    it('controls: plans, bans, refunds and penalties over generated limiters and timelines', async () => {
      await fc.assert(
        fc.asyncProperty(limiterSpecArb, startArb, controlTimelineArb, async (spec, start, steps) => {
          const { memory, redis: onPg } = await controlsBoth(central, spec, start, steps, denyCache);
          expectSameOutcomes(spec, steps, memory, onPg, denyCache);
        }),
        { numRuns: runs(300), ...replay() },
      );
    });

    it.each(FOUND_CONTROL_CASES)('controls, found before: $name', async ({ spec, start, steps }) => {
      const { memory, redis: onPg } = await controlsBoth(central, spec, start, steps, denyCache);
      const at = memory.findIndex((m, i) => !sameOutcome(m, onPg[i], tolerance));
      expect({ at, central: onPg[at] }).toEqual({ at: -1, central: undefined });
    });
  });
}

describe('postgresStore', () => {
  it('a policy is all or nothing: a denial by one rule takes nothing from the other', async () => {
    const store = postgresStore({ pool: db().pool(), clock: new ManualClock(1_000) });
    const limiter = createLimiter({
      rules: [
        fixedWindow({ name: 'own', limit: 2, windowMs: 60_000 }),
        fixedWindow({ name: 'all', limit: 5, windowMs: 60_000, scope: 'all' }),
      ],
      store,
      prefix: prefix(),
    });
    try {
      await limiter.ready();
      const first = [await limiter.tryAcquire('u1'), await limiter.tryAcquire('u1'), await limiter.tryAcquire('u1')];
      expect(first.map((d) => d.allowed)).toEqual([true, true, false]);
      // u1's third ask was refused by 'own': 'all' still has 3 of its 5.
      const others = [];
      for (const key of ['u2', 'u3', 'u4', 'u5']) others.push(await limiter.tryAcquire(key));
      expect(others.map((d) => d.allowed)).toEqual([true, true, true, false]);
    } finally {
      await limiter.close();
      await store.close();
    }
  });

  it("the controls: refund, penalize, block, unblock and reset, and another node's deny cache hears each", async () => {
    const clock = new ManualClock(5_000);
    const here = postgresStore({ pool: db().pool(), clock });
    const there = postgresStore({ pool: db().pool(), clock });
    const p = prefix();
    const rule = () => fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 });
    const a = createLimiter({ rules: rule(), store: here, prefix: p });
    const b = createLimiter({ rules: rule(), store: there, prefix: p });
    try {
      await Promise.all([a.ready(), b.ready()]);
      expect([(await a.tryAcquire('k')).allowed, (await a.tryAcquire('k')).allowed]).toEqual([true, true]);
      // b caches the denial; a's refund frees a permit and b hears it.
      expect((await b.tryAcquire('k')).allowed).toBe(false);
      let heard = nextEvent(there, 'reset-heard', (e: { key: string }) => e.key === 'k');
      await a.refund('k', 1);
      await heard;
      expect((await b.tryAcquire('k')).allowed).toBe(true);
      await a.penalize('k', 5);
      expect((await b.peek('k')).remaining).toBe(0);
      heard = nextEvent(there, 'reset-heard', (e: { key: string }) => e.key === 'k');
      await a.reset('k');
      await heard;
      expect((await b.tryAcquire('k')).allowed).toBe(true);
      await a.block('k', 30_000);
      const blocked = await b.tryAcquire('k');
      expect(blocked).toMatchObject({ allowed: false, blocked: true });
      heard = nextEvent(there, 'reset-heard', (e: { key: string }) => e.key === 'k');
      await a.unblock('k');
      await heard;
      expect((await b.tryAcquire('k')).allowed).toBe(true);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await Promise.all([here.close(), there.close()]);
    }
  });

  it('two stores on two pools share one limit: 200 asks at once, exactly the limit granted', async () => {
    // failMode 'closed' and a long deadline: a missed deadline could only grant fewer, never more.
    const stores = [0, 1].map(() =>
      postgresStore({ pool: db().pool({ max: 6 }), timeoutMs: 5_000, failMode: 'closed' }),
    );
    const p = prefix();
    const limiters = stores.map((store) =>
      createLimiter({ rules: fixedWindow({ name: 'api', limit: 50, windowMs: 3_600_000 }), store, prefix: p }),
    );
    try {
      await Promise.all(limiters.map((l) => l.ready()));
      const asks = Array.from({ length: 200 }, (_, i) =>
        (limiters[i % 2] as (typeof limiters)[0]).tryAcquire('shared'),
      );
      const decisions = await Promise.all(asks);
      expect(granted(decisions)).toBe(50);
      expect(decisions.every((d) => d.source !== 'fallback')).toBe(true);
    } finally {
      await Promise.all(limiters.map((l) => l.close()));
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('live limits: a reconfigure on one store is heard by the other; an override holds for its key on both', async () => {
    const stores = [0, 1].map(() => postgresStore({ pool: db().pool(), timeoutMs: 5_000 }));
    const p = prefix();
    const bucket = (capacity: number) => tokenBucket({ name: 'api', capacity, refillPerSecond: 0.001 });
    const [a, b] = stores.map((store) => createLimiter({ rules: bucket(10), store, prefix: p })) as [
      ReturnType<typeof createLimiter>,
      ReturnType<typeof createLimiter>,
    ];
    try {
      await Promise.all([a.ready(), b.ready()]);
      const heard = nextEvent(stores[1] as PostgresStore, 'reconfigured');
      const { version } = await a.reconfigure(bucket(3));
      const [event] = (await heard) as [{ version: number }];
      expect(event.version).toBe(version);
      expect(b.rules[0]?.limit).toBe(3);
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push(await b.tryAcquire('k'));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);

      const overridden = nextEvent(stores[1] as PostgresStore, 'reconfigured');
      await a.override('vip', [bucket(6)]);
      await overridden;
      const vip = [];
      for (let i = 0; i < 7; i++) vip.push(await b.tryAcquire('vip'));
      expect(granted(vip)).toBe(6);
      expect(vip[0]?.limit).toBe(6);
      expect((await a.tryAcquire('vip')).allowed).toBe(false);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  describe('PostgreSQL unreachable (a pool on a closed port)', () => {
    const unreachable = async () => {
      const pool = new pg.Pool({ host: '127.0.0.1', port: await freePort(), user: 'postgres', database: 'none' });
      pool.on('error', () => undefined);
      return pool;
    };

    it.each(['closed', 'open', 'local'] as const)(
      "failMode '%s': decisions come from the fail mode, within the deadline, with a store-error",
      async (failMode) => {
        const pool = await unreachable();
        const store = postgresStore({ pool, failMode, timeoutMs: 200, assumedNodes: 2 });
        const limiter = createLimiter({
          rules: fixedWindow({ name: 'api', limit: 4, windowMs: 60_000 }),
          store,
          prefix: prefix(),
        });
        try {
          await expect(store.ready()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
          const failed = nextEvent(store, 'store-error');
          const first = await limiter.tryAcquire('k');
          await failed;
          expect(store.degraded).toBe(true);
          const rest = [];
          for (let i = 0; i < 4; i++) rest.push(await limiter.tryAcquire('k'));
          const all = [first, ...rest];
          expect(all.every((d) => d.source === 'fallback')).toBe(true);
          // 'local': this node's share of the limit, 1 / assumedNodes (no fleet count on PostgreSQL yet).
          const expected = { closed: 0, open: 5, local: 2 }[failMode];
          expect(granted(all)).toBe(expected);
        } finally {
          await limiter.close();
          await store.close();
          await pool.end();
        }
      },
    );
  });

  it("PostgreSQL ending the pool's connections under traffic: nothing over-admitted, and the store comes back", async () => {
    const pool = db().pool({ max: 4, application_name: 'sluice-terminated' });
    const store = postgresStore({ pool, failMode: 'closed', timeoutMs: 1_000 });
    const rule = fixedWindow({ name: 'api', limit: 60, windowMs: 3_600_000 });
    const p = prefix();
    const limiter = createLimiter({ rules: rule, store, prefix: p });
    const admin = new pg.Client({ connectionString: db().url });
    await admin.connect();
    try {
      await limiter.ready();
      const decisions: Decision[] = [];
      const wave = async () => {
        const asks = Array.from({ length: 20 }, (_, i) => limiter.tryAcquire(`k${i % 3}`));
        decisions.push(...(await Promise.all(asks)));
      };
      await wave();
      const killed = await admin.query<{ ended: boolean }>(
        "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'sluice-terminated'",
      );
      expect(killed.rows.length).toBeGreaterThan(0);
      for (let i = 0; i < 10; i++) await wave();
      // Each key's own limit: never more than 60 granted for one key, on any path.
      for (const key of ['k0', 'k1', 'k2']) {
        const mine = decisions.filter((_, i) => `k${(i % 20) % 3}` === key);
        expect(granted(mine)).toBeLessThanOrEqual(60);
      }
      expect(granted(decisions)).toBeLessThanOrEqual(180);
      // The store answers from PostgreSQL again (after a failure, once its probe is answered).
      if (store.degraded) await nextEvent(store, 'store-recovered');
      const after = await limiter.peek('k0');
      expect(after.source).not.toBe('fallback');
      // Its channel is listened to again on a new connection: another node's reset is heard.
      await untilAsync(async () => {
        const { rows } = await admin.query(
          "SELECT 1 FROM pg_stat_activity WHERE application_name = 'sluice-terminated' AND query LIKE 'LISTEN%'",
        );
        return rows.length > 0;
      }, 'a connection listening again');
      const other = postgresStore({ pool: db().pool() });
      const otherLimiter = createLimiter({ rules: rule, store: other, prefix: p });
      try {
        const heard = nextEvent(store, 'reset-heard', (e: { key: string }) => e.key === 'k0');
        await otherLimiter.reset('k0');
        await heard;
      } finally {
        await otherLimiter.close();
        await other.close();
      }
    } finally {
      await admin.end();
      await limiter.close();
      await store.close();
    }
  });

  it('refuses unknown options by name, and what it cannot do yet, clearly', async () => {
    const pool = db().pool();
    expect(() => postgresStore({ pool, timeoutMS: 5 } as never)).toThrow(/timeoutMS/);
    expect(() => postgresStore({ pool, heartbeatMs: 5 } as never)).toThrow(/heartbeatMs/);
    expect(() => postgresStore({} as never)).toThrow(/pool/);
    const store = postgresStore({ pool });
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), store, prefix: prefix() });
    try {
      await expect(limiter.allow('10.0.0.1')).rejects.toThrow(SluiceError);
      await expect(limiter.allow('10.0.0.1')).rejects.toMatchObject({ code: 'UNSUPPORTED' });
      expect(() => concurrencyLimiter({ max: 1, store: store as never })).toThrow(/counts slots/);
    } finally {
      await limiter.close();
      await store.close();
    }
  });
});
