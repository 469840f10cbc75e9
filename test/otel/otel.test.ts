/**
 * @sluice/otel on a real MeterProvider of @opentelemetry/sdk-metrics, against real redis-server processes:
 * decisions counted per outcome, rule and source in every mode, latency recorded, degraded going to 1 while
 * Redis is stopped and back to 0 when it answers, leased permits and divided shares, no key in any
 * attribute, and no double counting when instrumented twice.
 */
import {
  ManualClock,
  createLimiter,
  fixedWindow,
  limiterStatuses,
  memoryStore,
  throttle,
  tokenBucket,
} from '@sluice/core';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { instrumentSluice } from '@sluice/otel';
import { INSTRUMENTS } from '../../packages/otel/src/names.js';
import { LEASE_PAYS_AT } from '../../packages/hybrid/src/leased-binding.js';
import { redisStore } from '@sluice/redis';
import { metrics } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRedisServer } from '../harness/redis-server.js';
import { useTestRedis } from '../harness/use-redis.js';
import { type TestMeter, testMeter } from './metrics.js';

const redis = useTestRedis();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh SDK MeterProvider, instrumented, undone after the test. */
function instrumented(): TestMeter {
  const meter = testMeter();
  const instrumentation = instrumentSluice({ meterProvider: meter.provider });
  cleanups.push(
    () => meter.shutdown(),
    () => instrumentation.stop(),
  );
  return meter;
}

const SECRET = 'user-4242-secret@example.com';

/**
 * No part of the key in what the meter exported: checked by its words, not by its digits ('4242' may be
 * part of a timestamp or a duration in the dump: a clean-clone CI run met one).
 */
function expectNoKeyIn(dump: string): void {
  for (const part of ['user-4242', 'secret@example.com', 'example.com']) expect(dump).not.toContain(part);
}
let n = 0;
const prefix = (mode: string) => `otel-${mode}-${++n}`;

async function waitFor(what: string, check: () => Promise<boolean>, maxWaitMs = 15_000): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > maxWaitMs) throw new Error(`${what}: not within ${maxWaitMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return performance.now() - started;
}

describe('sluice.throttle.queued, sluice.throttle.wait and sluice.throttle.pauses', () => {
  it('calls waiting now, each wait by outcome, pauses by origin; no key in any attribute', async () => {
    const meter = instrumented();
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 1_000 }),
      store: memoryStore({ clock }),
      prefix: prefix('throttle'),
    });
    const calls = throttle({ limiter, key: SECRET });
    cleanups.push(() => calls.close());
    const on = { 'sluice.throttle': limiter.prefix };
    await calls.run(() => undefined);
    const waiting = [calls.run(() => undefined), calls.run(() => undefined)];
    const controller = new AbortController();
    const aborted = calls.run(() => undefined, { signal: controller.signal }).catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await meter.total(INSTRUMENTS.throttleQueued, on)).toBe(3);
    controller.abort();
    await aborted;
    expect(await meter.total(INSTRUMENTS.throttleQueued, on)).toBe(2);
    await calls.pause(500);
    clock.advance(1_000);
    await waiting[0];
    clock.advance(1_000);
    await waiting[1];
    expect(await meter.total(INSTRUMENTS.throttleQueued, on)).toBe(0);
    expect(await meter.total(INSTRUMENTS.throttleWait, { ...on, 'sluice.throttle.outcome': 'started' })).toBe(3);
    expect(await meter.total(INSTRUMENTS.throttleWait, { ...on, 'sluice.throttle.outcome': 'aborted' })).toBe(1);
    expect(await meter.total(INSTRUMENTS.throttlePauses, { ...on, 'sluice.pause.origin': 'here' })).toBe(1);
    expectNoKeyIn(await meter.dump());
  });
});

describe('sluice.decisions and sluice.decision.duration', () => {
  it('memory: after a reconfigure decisions count under the rules in force; an override under its own', async () => {
    const meter = instrumented();
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 60_000, name: 'per-minute' }),
      prefix: prefix('live'),
    });
    for (let i = 0; i < 3; i++) await limiter.tryAcquire('k');
    await limiter.reconfigure([
      fixedWindow({ limit: 4, windowMs: 60_000, name: 'per-minute' }),
      fixedWindow({ limit: 100, windowMs: 3_600_000, name: 'per-hour' }),
    ]);
    // 2 used of the new 4: two granted (the tightest rule is per-minute), then denied by it.
    for (let i = 0; i < 3; i++) await limiter.tryAcquire('k');
    await limiter.override('vip', fixedWindow({ limit: 50, windowMs: 60_000, name: 'vip' }));
    await limiter.tryAcquire('vip');
    const count = (rule: string, outcome: string) =>
      meter.total('sluice.decisions', { 'sluice.rule': rule, 'sluice.outcome': outcome });
    expect(await count('per-minute', 'allowed')).toBe(4);
    expect(await count('per-minute', 'denied')).toBe(2);
    expect(await count('vip', 'allowed')).toBe(1);
    await limiter.close();
  });

  it('memory: counts per outcome, rule and source; shadowed denials marked; one duration per decision', async () => {
    const meter = instrumented();
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 3, windowMs: 60_000, name: 'per-minute' }),
      prefix: prefix('memory'),
    });
    for (let i = 0; i < 5; i++) await limiter.tryAcquire(SECRET);
    const shadow = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000, name: 'trial' }),
      prefix: prefix('shadow'),
      shadow: true,
    });
    for (let i = 0; i < 3; i++) await shadow.tryAcquire(SECRET);
    const on = { 'sluice.limiter': limiter.prefix };
    expect(
      await meter.total(INSTRUMENTS.decisions, {
        ...on,
        'sluice.outcome': 'allowed',
        'sluice.rule': 'per-minute',
        'sluice.source': 'memory',
      }),
    ).toBe(3);
    expect(
      await meter.total(INSTRUMENTS.decisions, {
        ...on,
        'sluice.outcome': 'denied',
        'sluice.rule': 'per-minute',
        'sluice.source': 'memory',
      }),
    ).toBe(2);
    expect(await meter.total(INSTRUMENTS.duration, on)).toBe(5);
    // 3 per minute: the third grant leaves 0, under 20% of the limit.
    expect(await meter.total(INSTRUMENTS.nearLimit, { ...on, 'sluice.rule': 'per-minute' })).toBe(1);
    const trial = { 'sluice.limiter': shadow.prefix, 'sluice.rule': 'trial' };
    expect(await meter.total(INSTRUMENTS.decisions, { ...trial, 'sluice.outcome': 'allowed' })).toBe(1);
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...trial, 'sluice.outcome': 'denied', 'sluice.shadowed': true }),
    ).toBe(2);
    const points = await meter.points(INSTRUMENTS.decisions);
    expect(
      points
        .filter((p) => p.attributes['sluice.shadowed'] !== undefined)
        .every((p) => p.attributes['sluice.limiter'] === shadow.prefix),
    ).toBe(true);
    expectNoKeyIn(await meter.dump());
  });

  it('allow and deny list decisions are counted by outcome with source access_list, never by key', async () => {
    const meter = instrumented();
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000, name: 'per-minute' }),
      prefix: prefix('lists'),
    });
    await limiter.allow(SECRET);
    await limiter.deny('203.0.113.0/24', { reason: 'scan' });
    for (let i = 0; i < 3; i++) await limiter.tryAcquire(SECRET);
    for (let i = 0; i < 2; i++) await limiter.tryAcquire('ip:203.0.113.9', { address: '203.0.113.9' });
    const listed = { 'sluice.limiter': limiter.prefix, 'sluice.source': 'access_list' };
    expect(await meter.total(INSTRUMENTS.decisions, { ...listed, 'sluice.outcome': 'allowed' })).toBe(3);
    expect(await meter.total(INSTRUMENTS.decisions, { ...listed, 'sluice.outcome': 'denied' })).toBe(2);
    expectNoKeyIn(await meter.dump());
    expect(await meter.dump()).not.toContain('203.0.113');
    await limiter.close();
  });

  it('a policy reports its tightest rule; plans keep their rule names', async () => {
    const meter = instrumented();
    const limiter = createLimiter({
      rules: [
        fixedWindow({ limit: 2, windowMs: 1_000, name: 'burst' }),
        fixedWindow({ limit: 100, windowMs: 3_600_000, name: 'hourly' }),
      ],
      prefix: prefix('policy'),
    });
    for (let i = 0; i < 3; i++) await limiter.tryAcquire(SECRET);
    expect(
      await meter.total(INSTRUMENTS.decisions, {
        'sluice.limiter': limiter.prefix,
        'sluice.outcome': 'denied',
        'sluice.rule': 'burst',
      }),
    ).toBe(1);
    expect(await meter.total(INSTRUMENTS.decisions, { 'sluice.limiter': limiter.prefix })).toBe(3);
  });

  it('exact mode on Redis: sources redis and deny_cache, counted apart; no key in any attribute', async () => {
    const meter = instrumented();
    // Sources are the point here: a loaded machine's 50 ms timeout would make them the fail mode's.
    const store = redisStore({ redis: redis().redis, timeoutMs: 5_000 });
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 86_400_000, name: 'exact' }),
      store,
      prefix: prefix('exact'),
    });
    cleanups.push(
      () => limiter.close(),
      () => store.close(),
    );
    for (let i = 0; i < 5; i++) await limiter.tryAcquire(SECRET);
    const on = { 'sluice.limiter': limiter.prefix, 'sluice.rule': 'exact' };
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': 'allowed', 'sluice.source': 'redis' }),
    ).toBe(2);
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': 'denied', 'sluice.source': 'redis' }),
    ).toBe(1);
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': 'denied', 'sluice.source': 'deny_cache' }),
    ).toBe(2);
    expect(await meter.total(INSTRUMENTS.duration, on)).toBe(5);
    expectNoKeyIn(await meter.dump());
  });

  it('leased mode: a cold key decided exactly, then decisions from the lease, and every permit leased counted', async () => {
    const meter = instrumented();
    const leased: number[] = [];
    const limiter = leasedLimiterOn({
      rules: tokenBucket({ capacity: 20, refillPerSecond: 0.001, name: 'leased' }),
      redis: redis().redis,
      prefix: prefix('leased'),
      clock: new ManualClock(1_000),
      maxLease: 4,
    });
    limiter.store.on('lease', (e) => leased.push(e.granted));
    cleanups.push(() => limiter.close());
    let allowed = 0;
    for (let i = 0; i < 25; i++) if ((await limiter.tryAcquire(SECRET)).allowed) allowed++;
    const on = { 'sluice.limiter': limiter.prefix, 'sluice.rule': 'leased' };
    expect(allowed).toBe(20);
    // The key's first requests: too cold for a lease, decided exactly on the central state.
    const exact = LEASE_PAYS_AT - 1;
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': 'allowed', 'sluice.source': 'redis' }),
    ).toBe(exact);
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': 'allowed', 'sluice.source': 'lease' }),
    ).toBe(20 - exact);
    expect(
      await meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': 'denied', 'sluice.source': 'lease' }),
    ).toBe(5);
    expect(await meter.total(INSTRUMENTS.leasePermits, { 'sluice.limiter': limiter.prefix })).toBe(
      leased.reduce((a, b) => a + b, 0),
    );
    expect(leased.reduce((a, b) => a + b, 0)).toBe(20 - exact);
  });

  it("divided mode: decisions from this node's share, and the share as a gauge", async () => {
    const meter = instrumented();
    const limiter = dividedLimiterOn({
      rules: fixedWindow({ limit: 10, windowMs: 60_000, name: 'divided' }),
      redis: redis().redis,
      prefix: prefix('divided'),
      heartbeatMs: 50,
      assumedNodes: 4,
    });
    cleanups.push(() => limiter.close());
    const share = async () =>
      (await meter.points(INSTRUMENTS.share)).find((p) => p.attributes['sluice.limiter'] === limiter.prefix)?.value;
    // Alone in the membership once a heartbeat answers: the whole limit less the reserve (30%).
    await waitFor('the share to reach 0.7', async () => (await share()) === 0.7);
    for (let i = 0; i < 12; i++) await limiter.tryAcquire(SECRET);
    const on = { 'sluice.limiter': limiter.prefix, 'sluice.rule': 'divided' };
    const count = (outcome: string, source: string) =>
      meter.total(INSTRUMENTS.decisions, { ...on, 'sluice.outcome': outcome, 'sluice.source': source });
    // 7 from the share, 3 drawn from the reserve in Redis (reported as leased), then denied.
    expect(await count('allowed', 'share')).toBe(7);
    expect(await count('allowed', 'lease')).toBe(3);
    expect(await count('denied', 'share')).toBe(2);
    await limiter.close();
    // Closed, it is no longer observed (the SDK may keep reporting a cumulative gauge's last value).
    expect(limiterStatuses().some((s) => s.limiter === limiter.prefix)).toBe(false);
  });
});

describe('sluice.store.degraded', () => {
  it('goes to 1 for exact, leased and divided limiters while their Redis is stopped, and back to 0 when it answers', async () => {
    const meter = instrumented();
    let server = await spawnRedisServer();
    const port = server.port;
    cleanups.push(() => server.stop());
    const client = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    client.on('error', () => {});
    cleanups.push(() => client.disconnect());
    const store = redisStore({ redis: client, timeoutMs: 100 });
    store.on('store-error', () => {});
    const exact = createLimiter({
      rules: fixedWindow({ limit: 1_000, windowMs: 60_000 }),
      store,
      prefix: prefix('exact'),
    });
    const leased = leasedLimiterOn({
      rules: tokenBucket({ capacity: 1_000, refillPerSecond: 1 }),
      redis: client,
      prefix: prefix('leased'),
      maxLease: 2,
      timeoutMs: 100,
    });
    const divided = dividedLimiterOn({
      rules: fixedWindow({ limit: 1_000, windowMs: 60_000 }),
      redis: client,
      prefix: prefix('divided'),
      heartbeatMs: 50,
    });
    leased.store.on('store-error', () => {});
    divided.store.on('store-error', () => {});
    cleanups.push(
      () => exact.close(),
      () => store.close(),
      () => leased.close(),
      () => divided.close(),
    );
    const names = [exact.prefix, leased.prefix, divided.prefix];
    const degraded = async () => {
      const points = await meter.points(INSTRUMENTS.degraded);
      return names.map((name) => points.find((p) => p.attributes['sluice.limiter'] === name)?.value);
    };
    const traffic = async () => {
      for (const l of [exact, leased, divided]) for (let i = 0; i < 3; i++) await l.tryAcquire('k');
    };
    await traffic();
    expect(await degraded()).toEqual([0, 0, 0]);

    await server.stop();
    const down = await waitFor('degraded to reach 1', async () => {
      await traffic();
      return (await degraded()).every((v) => v === 1);
    });
    // While degraded, exact mode's decisions are made by its fail mode, and say so.
    expect(
      await meter.total(INSTRUMENTS.decisions, { 'sluice.limiter': exact.prefix, 'sluice.source': 'fallback' }),
    ).toBeGreaterThan(0);

    server = await spawnRedisServer([], { port });
    const up = await waitFor('degraded to go back to 0', async () => {
      await traffic();
      return (await degraded()).every((v) => v === 0);
    });
    console.log(
      `sluice.store.degraded: 1 on all three modes ${down.toFixed(0)} ms after Redis stopped, 0 again ` +
        `${up.toFixed(0)} ms after it restarted`,
    );
  });
});

describe('instrumentSluice', () => {
  it('instrumenting twice does not double count; stop() stops counting; a second provider counts on its own', async () => {
    const meter = testMeter();
    cleanups.push(() => meter.shutdown());
    const first = instrumentSluice({ meterProvider: meter.provider });
    const second = instrumentSluice({ meterProvider: meter.provider });
    expect(second).toBe(first);
    const other = instrumented();
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 10, windowMs: 1_000 }),
      store: memoryStore(),
      prefix: prefix('twice'),
    });
    for (let i = 0; i < 4; i++) await limiter.tryAcquire('k');
    const on = { 'sluice.limiter': limiter.prefix };
    expect(await meter.total(INSTRUMENTS.decisions, on)).toBe(4);
    expect(await other.total(INSTRUMENTS.decisions, on)).toBe(4);
    first.stop();
    await limiter.tryAcquire('k');
    expect(await meter.total(INSTRUMENTS.decisions, on)).toBe(4);
    expect(await other.total(INSTRUMENTS.decisions, on)).toBe(5);
    // Stopped, it may be instrumented again: a new instrumentation counts from its own start (to a metrics
    // backend, a counter reset).
    const again = instrumentSluice({ meterProvider: meter.provider });
    expect(again).not.toBe(first);
    await limiter.tryAcquire('k');
    expect(await meter.total(INSTRUMENTS.decisions, on)).toBe(1);
    expect(await other.total(INSTRUMENTS.decisions, on)).toBe(6);
    again.stop();
  });

  it('rejects what is not a MeterProvider with a typed error naming it', () => {
    expect(() => instrumentSluice({ meterProvider: {} as never })).toThrow(
      /meterProvider must be an OpenTelemetry MeterProvider/,
    );
    expect(() => instrumentSluice('global' as never)).toThrow(/instrumentSluice options must be an object/);
  });
});

describe('the global MeterProvider', () => {
  it('before an SDK registers one, instrumentSluice() says so (SLUICE_OTEL_NO_PROVIDER); with one registered it records there', async () => {
    const warnings: { code?: string; message: string }[] = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push({ code: w.code, message: w.message });
    process.on('warning', onWarning);
    const noop = instrumentSluice();
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.code === 'SLUICE_OTEL_NO_PROVIDER')).toHaveLength(1);
    expect(warnings[0]?.message).toMatch(
      /Register the OpenTelemetry SDK before calling instrumentSluice\(\), or pass it a meterProvider/,
    );
    noop.stop();
    const meter = testMeter();
    metrics.setGlobalMeterProvider(meter.provider);
    cleanups.push(
      () => metrics.disable(),
      () => meter.shutdown(),
    );
    const global = instrumentSluice();
    cleanups.push(() => global.stop());
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), prefix: prefix('global') });
    await limiter.tryAcquire('k');
    expect(await meter.total(INSTRUMENTS.decisions, { 'sluice.limiter': limiter.prefix })).toBe(1);
    process.off('warning', onWarning);
  });
});
