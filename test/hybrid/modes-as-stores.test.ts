/**
 * Modes are stores: `createLimiter({ rules, store })` is the one way to build a limiter, and switching mode is a
 * one-line change of `store`. The same limiter code runs here on memoryStore, redisStore, leasedStore and
 * dividedStore (one node, so every mode's count is the fleet's); what a hybrid store cannot do (a policy,
 * plans, a ban) is refused at construction, naming the store and the control.
 */
import { type Store, createLimiter, fixedWindow, memoryStore } from '@sluice/core';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let n = 0;
const prefix = () => `modes-${process.pid}-${++n}`;
const opened: Store[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

/** Each mode's store, made the way a user makes it. */
const stores = {
  memory: () => memoryStore(),
  exact: () => redisStore({ redis: testRedis().redis }),
  leased: () => leasedStore({ redis: testRedis().redis }),
  divided: () => dividedStore({ redis: testRedis().redis, assumedNodes: 1 }),
} satisfies Record<string, () => Store>;

describe.each(Object.keys(stores) as (keyof typeof stores)[])('the same limiter code on the %s store', (mode) => {
  it('5 per minute: 5 granted, then denied; a refund of a grant gives one back; close unbinds', async () => {
    const store = stores[mode]();
    opened.push(store);
    // The one line that changes between modes is the store above.
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 5, windowMs: 60_000, name: 'api' }),
      store,
      prefix: prefix(),
    });
    const decisions = [];
    for (let i = 0; i < 7; i++) decisions.push(await limiter.tryAcquire('user:1'));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false]);
    expect(decisions.every((d) => d.rule === 'api' && d.limit === 5)).toBe(true);
    await limiter.refund('user:1', 1, { decision: decisions[4] });
    expect((await limiter.tryAcquire('user:1')).allowed).toBe(true);
    expect((await limiter.tryAcquire('user:1')).allowed).toBe(false);
    await limiter.close();
  });
});

/** A 5-per-minute limiter ('api') on `mode`'s store, one request of user:1 already decided. */
async function usedLimiterOn(mode: keyof typeof stores) {
  const store = stores[mode]();
  opened.push(store);
  const limiter = createLimiter({ rules: apiRule(5), store, prefix: prefix() });
  await limiter.tryAcquire('user:1');
  return limiter;
}
const apiRule = (limit: number) => fixedWindow({ limit, windowMs: 60_000, name: 'api' });

describe.each(Object.keys(stores) as (keyof typeof stores)[])('per-rule permits on the %s store', (mode) => {
  it("a call's permits by rule name: a one-rule limiter counts its rule's; a policy (memory, exact) counts each rule its own", async () => {
    const limiter = await usedLimiterOn(mode);
    expect((await limiter.tryAcquire('user:1', { permits: { api: 2 } })).allowed).toBe(true);
    // 3 of 5 used: two more.
    const next = [];
    for (let i = 0; i < 3; i++) next.push((await limiter.tryAcquire('user:1')).allowed);
    expect(next).toEqual([true, true, false]);
    await expect(limiter.tryAcquire('user:1', { permits: { apii: 1 } })).rejects.toMatchObject({
      argument: 'permits.apii',
    });
    await limiter.close();
    if (mode !== 'memory' && mode !== 'exact') return;
    const store = stores[mode]();
    opened.push(store);
    const rules = [apiRule(5), fixedWindow({ name: 'tokens', limit: 1_000, windowMs: 60_000 })];
    const policy = createLimiter({ rules, store, prefix: prefix() });
    const perRule = { permits: { api: 1, tokens: 400 } };
    expect((await policy.tryAcquire('user:1', perRule)).rules?.map((r) => r.remaining)).toEqual([4, 600]);
    expect((await policy.peek('user:1')).rules?.map((r) => r.remaining)).toEqual([4, 600]);
    await policy.close();
  });
});

describe.each(['exact', 'leased'] as const)('live limits on the %s store', (mode) => {
  it('reconfigure and override change the rules (test/redis and test/hybrid live-limits tests have the fleet)', async () => {
    const limiter = await usedLimiterOn(mode);
    // On Redis a version is Redis's time of the change (or one more than the last): see docs/live-limits.md.
    const { version } = await limiter.reconfigure(apiRule(10));
    expect(await limiter.tryAcquire('user:1')).toMatchObject({
      allowed: true,
      limit: 10,
      remaining: 8,
      configVersion: version,
    });
    await limiter.override('user:1', apiRule(3));
    expect(await limiter.tryAcquire('user:1')).toMatchObject({ allowed: true, limit: 3, remaining: 0, override: true });
    await limiter.close();
  });
});

describe.each(['divided'] as const)('live limits on the %s store', (mode) => {
  it('reconfigure changes the rule in place; an override gives the key rules of its own, decided on the engine; removed, the key is divided again', async () => {
    const limiter = await usedLimiterOn(mode);
    const { version } = await limiter.reconfigure(apiRule(10));
    expect(await limiter.tryAcquire('user:1')).toMatchObject({ allowed: true, limit: 10, configVersion: version });
    const before = await limiter.peek('user:1');
    await limiter.override('user:1', apiRule(3));
    // The override's rules start afresh (what the key used is spread over the nodes' shares).
    const own = [];
    for (let i = 0; i < 4; i++) own.push(await limiter.tryAcquire('user:1'));
    expect(own.map((d) => [d.allowed, d.limit, d.remaining, d.override])).toEqual([
      [true, 3, 2, true],
      [true, 3, 1, true],
      [true, 3, 0, true],
      [false, 3, 0, true],
    ]);
    expect(await limiter.tryAcquire('user:2')).toMatchObject({ allowed: true, limit: 10 });
    expect((await limiter.overrides()).overrides).toEqual([
      { key: 'user:1', rules: [expect.objectContaining({ limit: 3 })] },
    ]);
    await limiter.removeOverride('user:1');
    // Back to its share, as the override found it.
    expect(await limiter.peek('user:1')).toMatchObject({ allowed: true, limit: 10, remaining: before.remaining });
    expect((await limiter.overrides()).overrides).toEqual([]);
    await limiter.close();
  });
});

describe.each(['leased', 'divided'] as const)('what the %s store cannot do', (mode) => {
  const name = `${mode}Store`;
  const make = () => {
    const store = stores[mode]();
    opened.push(store);
    return store;
  };

  it('a closed store binds no limiter (nothing is opened again)', async () => {
    const store = make();
    await store.close();
    expect(() => createLimiter({ rules: apiRule(5), store, prefix: prefix() })).toThrow(
      expect.objectContaining({ code: 'CLOSED' }),
    );
  });

  it('a policy, plans and blockMs are refused at construction, naming the store and the control', () => {
    const store = make();
    const rule = (limit: number, extra = {}) => fixedWindow({ limit, windowMs: 1_000, ...extra });
    expect(() => createLimiter({ rules: [rule(5, { name: 'a' }), rule(50, { name: 'b' })], store })).toThrow(
      expect.objectContaining({ argument: 'rules', message: expect.stringContaining(`${name} enforces one rule`) }),
    );
    expect(() => createLimiter({ plans: { free: rule(5), pro: rule(50) }, store })).toThrow(
      expect.objectContaining({ argument: 'plans', message: expect.stringContaining(`${name} cannot honour plans`) }),
    );
    expect(() => createLimiter({ rules: rule(5, { blockMs: 60_000 }), store })).toThrow(
      expect.objectContaining({
        argument: 'blockMs',
        message: expect.stringContaining(`${name} cannot honour blockMs`),
      }),
    );
  });

  it('its start-up check passes through ready(), and its events are on the store', async () => {
    const store = make() as Store & { ready(): Promise<void>; on(event: string, listener: () => void): unknown };
    createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), store, prefix: prefix() });
    await store.ready();
    expect(typeof store.on).toBe('function');
  });
});

it('leasedStore: options are checked when the store is made, with typed errors naming them', () => {
  const redis = testRedis().redis;
  expect(() => leasedStore({ redis, lowWater: 2 })).toThrow(expect.objectContaining({ argument: 'lowWater' }));
  expect(() => dividedStore({ redis, share: 'fair' as never })).toThrow(expect.objectContaining({ argument: 'share' }));
  expect(() => leasedStore({ redis: {} as never })).toThrow(expect.objectContaining({ argument: 'redis' }));
});
