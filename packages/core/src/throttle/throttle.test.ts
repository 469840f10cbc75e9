import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { createLimiter } from '../engine/limiter.js';
import type { Rules } from '../engine/policy.js';
import { memoryStore } from '../engine/memory-store.js';
import { type ThrottleEvent, observeSluice } from '../engine/observe.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceError } from '../foundation/errors.js';
import { type Throttle, throttle } from './throttle.js';
import { heldProvider } from '@sluice/test-kit';

/** Lets every queued microtask run (grants, wake-ups), to the end of this turn of the event loop: no clock time passes. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const opened: Throttle[] = [];
afterEach(async () => {
  for (const t of opened.splice(0)) await t.close();
});

/** A throttle over `rules` on a memory store with a ManualClock at 0. */
function manual(rules: Rules, options: { maxQueue?: number } = {}) {
  const clock = new ManualClock(0);
  const limiter = createLimiter({ rules, store: memoryStore({ clock }) });
  const t = throttle({ limiter, ...options });
  opened.push(t);
  return { clock, limiter, t };
}

/** Moves the clock `stepMs` at a time until `done()` or `maxMs` passed. */
async function runClock(clock: ManualClock, done: () => boolean, maxMs: number, stepMs = 1): Promise<void> {
  for (let t = 0; t < maxMs && !done(); t += stepMs) {
    clock.advance(stepMs);
    await settle();
  }
}

describe('throttle on the memory store', () => {
  it('calls start in arrival order, higher priority first, never more than the limit in any window (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(
          fc.record({
            arriveMs: fc.integer({ min: 0, max: 300 }),
            priority: fc.oneof(
              { weight: 3, arbitrary: fc.constant(0) },
              { weight: 1, arbitrary: fc.integer({ min: -2, max: 2 }) },
            ),
            permits: fc.integer({ min: 1, max: 2 }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (limit, calls) => {
          const windowMs = 100;
          const { clock, t } = manual(fixedWindow({ limit: Math.max(limit, 2), windowMs }));
          const started: Array<{ index: number; at: number; permits: number }> = [];
          const order = calls
            .map((call, index) => ({ ...call, index }))
            .sort((x, y) => x.arriveMs - y.arriveMs || x.index - y.index);
          const runs: Promise<void>[] = [];
          let now = 0;
          for (const call of order) {
            clock.advance(call.arriveMs - now);
            now = call.arriveMs;
            runs.push(
              t.run(
                () => {
                  started.push({ index: call.index, at: clock.now(), permits: call.permits });
                },
                { permits: call.permits, priority: call.priority },
              ),
            );
            await settle();
          }
          await runClock(clock, () => started.length === calls.length, 100 * calls.length + 500);
          await Promise.all(runs);
          // Never more than the limit in one window.
          const perWindow = new Map<number, number>();
          for (const s of started) {
            const w = Math.floor(s.at / windowMs);
            perWindow.set(w, (perWindow.get(w) ?? 0) + s.permits);
          }
          for (const count of perWindow.values()) expect(count).toBeLessThanOrEqual(Math.max(limit, 2));
          // A call never starts before one that arrived earlier with its priority or higher.
          const arrival = new Map(order.map((c, i) => [c.index, i]));
          const startRank = new Map(started.map((s, i) => [s.index, i]));
          for (const a of order) {
            for (const b of order) {
              if ((arrival.get(a.index) as number) < (arrival.get(b.index) as number) && a.priority >= b.priority) {
                // b could only pass a if b arrived while a was already being admitted; a started first otherwise.
                const aStart = startRank.get(a.index) as number;
                const bStart = startRank.get(b.index) as number;
                if (bStart < aStart) expect({ a, b, started }).toBeUndefined();
              }
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('per-rule permits: one call counts 1 request and 1,200 tokens; settle corrects the tokens both ways', async () => {
    const { limiter, t } = manual([
      fixedWindow({ name: 'rpm', limit: 10, windowMs: 60_000 }),
      fixedWindow({ name: 'tpm', limit: 10_000, windowMs: 60_000 }),
    ]);
    const remaining = async () => (await limiter.peek('default')).rules?.map((r) => r.remaining);
    await t.run(
      async (ticket) => {
        expect(ticket.permits).toEqual({ rpm: 1, tpm: 1_200 });
        expect(await remaining()).toEqual([9, 8_800]);
        await ticket.settle({ tpm: 900 });
        expect(ticket.settled).toBe(true);
      },
      { permits: { rpm: 1, tpm: 1_200 } },
    );
    expect(await remaining()).toEqual([9, 9_100]);
    await t.run((ticket) => ticket.settle({ rpm: 1, tpm: 2_000 }), { permits: { rpm: 1, tpm: 1_200 } });
    expect(await remaining()).toEqual([8, 7_100]);
  });

  it('a number settles a one-rule throttle only: settle(500) on requests + tokens is a typed error, nothing changed', async () => {
    const { limiter, t } = manual([
      fixedWindow({ name: 'rpm', limit: 60, windowMs: 60_000 }),
      fixedWindow({ name: 'tpm', limit: 100_000, windowMs: 60_000 }),
    ]);
    const remaining = async () => (await limiter.peek('default')).rules?.map((r) => r.remaining);
    await t.run(
      async (ticket) => {
        // It once set both rules to 500: the requests rule went 444 below zero, every call held for 7.5 minutes.
        await expect(ticket.settle(500)).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
          argument: 'actual',
          message: expect.stringMatching(/one number for a policy of 2 rules \(rpm, tpm\).*\{ tpm: 500 \}/),
        });
        expect(ticket.settled).toBe(false);
        expect(await remaining()).toEqual([59, 99_000]);
        await ticket.settle({ tpm: 500 });
      },
      { permits: { rpm: 1, tpm: 1_000 } },
    );
    expect(await remaining()).toEqual([59, 99_500]);
    // One rule: a number is that rule's count.
    const one = manual(fixedWindow({ name: 'tpm', limit: 1_000, windowMs: 60_000 }));
    await one.t.run((ticket) => ticket.settle(300), { permits: 800 });
    expect((await one.limiter.peek('default')).remaining).toBe(700);
  });

  it('bad settles: twice, negative, fractional, absurd, an unknown rule; each a typed error that changes nothing', async () => {
    const { limiter, t } = manual([
      fixedWindow({ name: 'rpm', limit: 10, windowMs: 60_000 }),
      fixedWindow({ name: 'tpm', limit: 10_000, windowMs: 60_000 }),
    ]);
    const before: unknown[] = [];
    await t.run(
      async (ticket) => {
        before.push((await limiter.peek('default')).rules?.map((r) => r.remaining));
        await expect(ticket.settle({ tpm: -5 })).rejects.toMatchObject({ argument: 'actual.tpm' });
        await expect(ticket.settle(1.5)).rejects.toMatchObject({ argument: 'actual' });
        await expect(ticket.settle({ tpm: 10_000 * 100 + 1 })).rejects.toMatchObject({
          argument: 'actual.tpm',
          message: expect.stringMatching(/over 100 times/),
        });
        await expect(ticket.settle({ tokens: 5 })).rejects.toMatchObject({ argument: 'actual.tokens' });
        await expect(ticket.settle('900' as unknown as number)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(ticket.settled).toBe(false);
        expect((await limiter.peek('default')).rules?.map((r) => r.remaining)).toEqual(before[0]);
        await ticket.settle({ tpm: 1_000 });
        await expect(ticket.settle({ tpm: 10 })).rejects.toMatchObject({ code: 'ALREADY_SETTLED' });
      },
      { permits: { rpm: 1, tpm: 1_200 } },
    );
    expect((await limiter.peek('default')).rules?.map((r) => r.remaining)).toEqual([9, 9_000]);
  });

  it('bad run input is refused before queueing, consuming nothing', async () => {
    const { limiter, t } = manual(fixedWindow({ name: 'rpm', limit: 5, windowMs: 60_000 }));
    const fn = () => undefined;
    await expect(t.run(fn, { permits: 0 })).rejects.toMatchObject({ argument: 'permits' });
    await expect(t.run(fn, { permits: { tpm: 3 } })).rejects.toMatchObject({ argument: 'permits.tpm' });
    await expect(t.run(fn, { priority: 1.5 })).rejects.toMatchObject({ argument: 'priority' });
    await expect(t.run(fn, { priority: 5_000 })).rejects.toMatchObject({ argument: 'priority' });
    await expect(t.run(fn, { key: '' })).rejects.toMatchObject({ argument: 'key' });
    await expect(t.run(fn, { maxWaitMs: -1 })).rejects.toMatchObject({ argument: 'maxWaitMs' });
    await expect(t.run('call' as unknown as () => void)).rejects.toMatchObject({ argument: 'fn' });
    await expect(t.pause(0)).rejects.toMatchObject({ argument: 'ms' });
    await expect(t.pause(Number.NaN)).rejects.toMatchObject({ argument: 'ms' });
    expect((await limiter.peek('default')).remaining).toBe(5);
    expect(() => throttle({ limiter, order: 'lifo' as 'fifo' })).toThrow(
      expect.objectContaining({ argument: 'order' }),
    );
    expect(() => throttle({ limiter: {} as typeof limiter })).toThrow(expect.objectContaining({ argument: 'limiter' }));
    expect(() => throttle({ limiter, maxQueue: 0 })).toThrow(expect.objectContaining({ argument: 'maxQueue' }));
  });

  it('maxQueue: one more waiting call is refused with QUEUE_FULL at once, naming the key', async () => {
    const { clock, t } = manual(fixedWindow({ limit: 1, windowMs: 1_000 }), { maxQueue: 2 });
    const calls = [t.run(() => 'a')];
    await settle();
    calls.push(
      t.run(() => 'b'),
      t.run(() => 'c'),
    );
    await settle();
    // 'a' started; 'b' holds the turn waiting for the window, 'c' waits for the turn: two wait.
    expect(t.queued()).toBe(2);
    const events: ThrottleEvent[] = [];
    const stop = observeSluice({ throttle: (e) => events.push(e) });
    await expect(t.run(() => 'd')).rejects.toMatchObject({
      code: 'QUEUE_FULL',
      message: expect.stringContaining('2 calls of "default" already wait'),
    });
    stop();
    expect(events).toEqual([
      { type: 'left', throttle: t.limiter.prefix, key: 'default', reason: 'queue_full', waitedMs: 0, queued: 2 },
    ]);
    // Another key has a queue of its own.
    const other = t.run(() => 'x', { key: 'other' });
    await runClock(clock, () => false, 2_000);
    expect(await Promise.all([...calls, other])).toEqual(['a', 'b', 'c', 'x']);
  });

  it('an abort while queued leaves at once and consumes nothing; a timeout that cannot be met leaves at once', async () => {
    const { clock, limiter, t } = manual(fixedWindow({ limit: 1, windowMs: 1_000 }));
    await t.run(() => undefined);
    const controller = new AbortController();
    const holder = t.run(() => 'next');
    const queued = t.run(() => 'never', { signal: controller.signal });
    await settle();
    expect(t.queued()).toBe(2);
    controller.abort();
    await expect(queued).rejects.toMatchObject({ code: 'ABORTED' });
    expect(t.queued()).toBe(1);
    // Behind the holder for its turn: its timeout passes first.
    const late = t.run(() => 'late', { maxWaitMs: 500 });
    await settle();
    clock.advance(500);
    await expect(late).rejects.toMatchObject({ code: 'WAIT_EXPIRED' });
    clock.advance(500);
    await settle();
    expect(await holder).toBe('next');
    // The aborted and the timed-out calls took nothing: the holder's one is all of this window.
    expect((await limiter.peek('default')).remaining).toBe(0);
    clock.advance(1_000);
    expect((await limiter.peek('default')).remaining).toBe(1);
  });

  it('pause(ms) holds every call of the throttle until it ends; a key pause holds that key only', async () => {
    const { clock, t } = manual(tokenBucket({ capacity: 100, refillPerSecond: 100 }));
    const events: ThrottleEvent[] = [];
    const stop = observeSluice({ throttle: (e) => events.push(e) });
    try {
      await t.pause(2_000);
      const started: string[] = [];
      const a = t.run(() => started.push('a'));
      const b = t.run(() => started.push('b'), { key: 'other' });
      await settle();
      expect(started).toEqual([]);
      expect(await t.pausedFor()).toBe(2_000);
      clock.advance(1_999);
      await settle();
      expect(started).toEqual([]);
      clock.advance(1);
      await Promise.all([a, b]);
      expect(started.sort()).toEqual(['a', 'b']);
      await t.pause(500, 'other');
      expect(await t.pausedFor('other')).toBe(500);
      expect(await t.pausedFor()).toBe(0);
      await t.run(() => started.push('c'));
      expect(started).toContain('c');
      expect(events.filter((e) => e.type === 'paused').map((e) => e.type === 'paused' && [e.key, e.ms])).toEqual([
        [undefined, 2_000],
        ['other', 500],
      ]);
      const startedEvents = events.filter((e) => e.type === 'started');
      expect(startedEvents.map((e) => e.type === 'started' && e.waitedMs)).toEqual([2_000, 2_000, 0]);
    } finally {
      stop();
    }
  });

  it('close() rejects every waiting call with CLOSED; the throttle then refuses new calls', async () => {
    const { t } = manual(fixedWindow({ limit: 1, windowMs: 60_000 }));
    await t.run(() => undefined);
    const waiting = [t.run(() => 1), t.run(() => 2), t.run(() => 3)];
    await settle();
    await t.close();
    for (const w of waiting) await expect(w).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(t.run(() => 4)).rejects.toMatchObject({ code: 'CLOSED' });
    expect(t.queued()).toBe(0);
  });

  it('permits over a rule limit can never start: NEVER_ALLOWED, nothing queued behind it for ever', async () => {
    const { t } = manual(fixedWindow({ limit: 5, windowMs: 60_000 }));
    await expect(t.run(() => undefined, { permits: 6 })).rejects.toBeInstanceOf(SluiceError);
    await expect(t.run(() => 'ok', { permits: 5 })).resolves.toBe('ok');
  });
});

describe('throttle.fetch on the memory store', () => {
  it("a 429 pauses the key for its Retry-After, then the call is sent again; 'maxRetries' bounds it", async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 10 }),
      store: memoryStore({ clock }),
    });
    const answers = [429, 429, 200];
    const sent: number[] = [];
    const fetch = async () => {
      sent.push(clock.now());
      const status = answers.shift() ?? 200;
      return new Response(status === 200 ? 'ok' : 'slow down', { status, headers: { 'retry-after': '3' } });
    };
    const t = throttle({ limiter, fetch, maxRetries: 2 });
    opened.push(t);
    const response = t.fetch('http://provider.test/v1/chat', { method: 'POST', body: '{}' });
    await settle();
    await runClock(clock, () => sent.length === 3, 10_000, 1_000);
    expect((await response).status).toBe(200);
    expect(sent).toEqual([0, 3_000, 6_000]);
    // Refused three times: after two retries the refusal comes back as it came, the key paused again.
    answers.push(429, 429, 429);
    const refused = t.fetch('http://provider.test/v1/chat', { throttle: { key: 'k2' } });
    await settle();
    await runClock(clock, () => sent.length === 6, 10_000, 1_000);
    expect((await refused).status).toBe(429);
    expect(sent.slice(3)).toEqual([6_000, 9_000, 12_000]);
    expect(await t.pausedFor('k2')).toBe(3_000);
    expect(await t.pausedFor()).toBe(0);
  });

  it('a call the provider answered 429 keeps its place: sent again ahead of the calls that came after it', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), store: memoryStore({ clock }) });
    const { fetch, started, firstSent, answerFirst: refuse } = heldProvider();
    const t = throttle({ limiter, fetch });
    opened.push(t);
    const r = t.fetch('http://provider.test/v1/chat');
    await firstSent;
    // Three calls come while r is out: c1 holds the turn, waiting for the window; c2 and c3 wait behind it.
    const calls = ['c1', 'c2', 'c3'].map((name) => t.run(() => void started.push(name)));
    await settle();
    expect(t.queued()).toBe(3);
    refuse(new Response('slow down', { status: 429, headers: { 'retry-after': '2' } }));
    await runClock(clock, () => started.length === 5, 10_000, 100);
    await Promise.all([r, ...calls]);
    // r's retry waits behind the turn's holder only (it was at the head when r left), never behind c2 and c3.
    expect(started).toEqual(['r', 'c1', 'r', 'c2', 'c3']);
  });

  it('a pause asked for is clamped to minPauseMs..maxPauseMs', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: tokenBucket({ capacity: 10, refillPerSecond: 10 }),
      store: memoryStore({ clock }),
    });
    const headers: Record<string, string>[] = [{ 'retry-after': '3600' }, { 'retry-after': '0' }, {}];
    const fetch = async () => new Response('', { status: 429, headers: headers.shift() ?? {} });
    const t = throttle({ limiter, fetch, maxRetries: 0, maxPauseMs: 30_000, minPauseMs: 500 });
    opened.push(t);
    await t.fetch('http://p.test', { throttle: { key: 'a' } });
    expect(await t.pausedFor('a')).toBe(30_000);
    await t.fetch('http://p.test', { throttle: { key: 'b' } });
    expect(await t.pausedFor('b')).toBe(500);
    await t.fetch('http://p.test', { throttle: { key: 'c' } });
    expect(await t.pausedFor('c')).toBe(500);
  });
});
