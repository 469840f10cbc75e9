import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { ManualClock } from '../foundation/clock.js';
import { SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import { type ObservedDecision, limiterStatuses, observeSluice, observed, registerStatus } from './observe.js';
import type { Store } from './store.js';

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

function recorder(): ObservedDecision[] {
  const seen: ObservedDecision[] = [];
  stops.push(observeSluice({ decision: (e) => seen.push(e) }));
  return seen;
}

describe('observeSluice', () => {
  it('sees every tryAcquire and acquire of every limiter, with its prefix, source and duration; never peeks', async () => {
    const clock = new ManualClock(0);
    const before = createLimiter({
      rules: fixedWindow({ limit: 2, windowMs: 1_000 }),
      prefix: 'made-before',
      clock,
    });
    const seen = recorder();
    const after = createLimiter({
      rules: tokenBucket({ capacity: 1, refillPerSecond: 1, name: 'tb' }),
      prefix: 'made-after',
      store: memoryStore({ clock }),
    });
    await before.tryAcquire('k');
    await before.tryAcquire('k', { permits: 1 });
    await before.tryAcquire('k');
    await after.acquire('k');
    await after.peek('k');
    expect(seen.map((e) => [e.limiter, e.decision.allowed, e.source])).toEqual([
      ['made-before', true, 'memory'],
      ['made-before', true, 'memory'],
      ['made-before', false, 'memory'],
      ['made-after', true, 'memory'],
    ]);
    expect(seen[3]?.decision.rule).toBe('tb');
    for (const e of seen) expect(e.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('records a waited call once, with the wait in its duration', async () => {
    const seen = recorder();
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 1, refillPerSecond: 50 }) });
    await limiter.tryAcquire('k');
    const d = await limiter.tryAcquire('k', { maxWaitMs: 1_000 });
    expect(d.allowed).toBe(true);
    expect(seen).toHaveLength(2);
    expect(seen[1]?.durationMs).toBeGreaterThanOrEqual(10);
  });

  it('sees shadowed decisions as the callers get them', async () => {
    const seen = recorder();
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }), shadow: true });
    await limiter.tryAcquire('k');
    await limiter.tryAcquire('k');
    expect(seen.map((e) => [e.decision.allowed, e.decision.shadowed])).toEqual([
      [true, undefined],
      [true, true],
    ]);
  });

  it('an observer that throws never reaches the caller (reported as SLUICE_CALLBACK_ERROR)', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    stops.push(
      observeSluice({
        decision: () => {
          throw new Error('broken dashboard');
        },
      }),
    );
    const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1_000 }) });
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
    expect((await limiter.tryAcquire('k')).allowed).toBe(false);
    expect(
      warn.mock.calls.filter((c) => JSON.stringify(c).includes('SLUICE_CALLBACK_ERROR')).length,
    ).toBeGreaterThanOrEqual(1);
    warn.mockRestore();
  });

  it('stops when removed; registering one observer twice records once; bad observers are typed errors', async () => {
    const seen: ObservedDecision[] = [];
    const observer = { decision: (e: ObservedDecision) => seen.push(e) };
    const stop = observeSluice(observer);
    const again = observeSluice(observer);
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }) });
    await limiter.tryAcquire('k');
    expect(seen).toHaveLength(1);
    stop();
    again();
    expect(observed()).toBe(false);
    await limiter.tryAcquire('k');
    expect(seen).toHaveLength(1);
    expect(() => observeSluice(null as never)).toThrow(SluiceTypeError);
    expect(() => observeSluice({ decision: 'yes' } as never)).toThrow(/observer.decision must be a function/);
    expect(observed()).toBe(false);
  });
});

describe('limiterStatuses', () => {
  it('lists limiters whose store reports degraded, until they close; memory limiters are not listed', async () => {
    let degraded = false;
    const inner = memoryStore();
    const store: Store = {
      get degraded() {
        return degraded;
      },
      bind: (ruleSet) => inner.bind(ruleSet),
      close: () => inner.close(),
    };
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), store, prefix: 'flaky' });
    const plain = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 1_000 }), prefix: 'plain' });
    const mine = () => limiterStatuses().filter((s) => s.limiter === 'flaky' || s.limiter === 'plain');
    expect(mine()).toEqual([{ limiter: 'flaky', degraded: false, share: undefined }]);
    degraded = true;
    expect(mine()).toEqual([{ limiter: 'flaky', degraded: true, share: undefined }]);
    await limiter.close();
    await plain.close();
    expect(mine()).toEqual([]);
  });

  it('does not keep a source alive: a collected one drops off the list', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc === undefined) {
      // Without --expose-gc, a source that is unlisted by hand still goes.
      const unlist = registerStatus('temporary', { degraded: false });
      unlist();
      expect(limiterStatuses().some((s) => s.limiter === 'temporary')).toBe(false);
      return;
    }
    (() => registerStatus('temporary', { degraded: false }))();
    for (let i = 0; i < 5 && limiterStatuses().some((s) => s.limiter === 'temporary'); i++) {
      await new Promise((r) => setTimeout(r, 10));
      gc();
    }
    expect(limiterStatuses().some((s) => s.limiter === 'temporary')).toBe(false);
  });
});
