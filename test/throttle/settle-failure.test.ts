/**
 * A settle that fails changes nothing and leaves the ticket unsettled, so it can be called again: settling
 * after `limiter.close()` once threw CLOSED yet left `ticket.settled === true` (a retry got ALREADY_SETTLED),
 * and a store error lost the refund for good. Two settles at once apply once: the second waits for the
 * first, and is ALREADY_SETTLED if the first landed, or tried in its turn if it failed. A policy's settle is
 * a refund and a penalty (two store calls): when one lands and the other fails, a retry applies the rest only.
 *
 * The failing store is a store of one's own (the Store contract lets refund and penalize reject), over the
 * memory store: it fails or holds a control while the test says so.
 */
import {
  type Algorithm,
  ManualClock,
  type Permits,
  type Store,
  type ThrottleTicket,
  createLimiter,
  fixedWindow,
  memoryStore,
  throttle,
} from '@sluice/core';
import type { BoundStore, RuleSet } from '@sluice/core/internal';
import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../harness/closers.js';

const closers = closeAfterEach();

type Control = 'refund' | 'penalize';

/**
 * A memory store whose refund or penalize fails while `failing` holds it, or fails its next `failNext` calls,
 * and waits for a gate while one is held.
 */
function faultyStore(clock: ManualClock) {
  const inner = memoryStore({ clock });
  const failing = new Set<Control>();
  const failNext: Record<Control, number> = { refund: 0, penalize: 0 };
  const calls: Record<Control, number> = { refund: 0, penalize: 0 };
  let gate: Promise<void> | undefined;
  const wrap =
    <A extends unknown[]>(what: Control, control: (...args: A) => void | Promise<void>) =>
    async (...args: A) => {
      calls[what]++;
      const fails = failing.has(what) || failNext[what]-- > 0;
      if (gate !== undefined) await gate;
      if (fails) throw new Error(`${what}: the store is away`);
      await control(...args);
    };
  const store: Store = {
    clock,
    bind(ruleSet: RuleSet): BoundStore {
      const bound = inner.bind(ruleSet);
      const refund = bound.refund?.bind(bound);
      const penalize = bound.penalize?.bind(bound);
      if (refund === undefined || penalize === undefined) throw new Error('the memory store refunds and penalizes');
      return {
        consume: (key, permits, maxWaitMs, note) => bound.consume(key, permits, maxWaitMs, note),
        peek: (key) => bound.peek(key),
        reset: (key) => bound.reset(key),
        refund: wrap('refund', (key: string, permits: Permits, ago: number) => refund(key, permits, ago)),
        penalize: wrap('penalize', (key: string, permits: Permits) => penalize(key, permits)),
      };
    },
    close: () => inner.close(),
  };
  return {
    store,
    failing,
    failNext,
    calls,
    /** Holds every refund and penalty until the returned function is called. */
    hold(): () => void {
      let open = () => {};
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
  };
}

function setup(rules: Algorithm | Algorithm[]) {
  const clock = new ManualClock(Date.UTC(2026, 10, 27));
  const faulty = faultyStore(clock);
  const limiter = createLimiter({ rules, store: faulty.store, clock });
  const t = throttle({ limiter });
  closers.push(() => limiter.close());
  closers.push(() => t.close());
  const remaining = async () => {
    const standing = await limiter.peek(t.key);
    return standing.rules?.map((r) => r.remaining) ?? [standing.remaining];
  };
  /** A granted ticket of `permits`, its call finished. */
  const ticket = (permits: Permits) => t.run((granted: ThrottleTicket) => granted, { permits });
  return { ...faulty, limiter, t, remaining, ticket };
}

const tpm = () => fixedWindow({ name: 'tpm', limit: 1_000, windowMs: 60_000 });
const rpm = () => fixedWindow({ name: 'rpm', limit: 10, windowMs: 60_000 });

describe('ticket.settle that fails', () => {
  it('after limiter.close(): CLOSED, the ticket stays unsettled, and a retry is CLOSED again (not ALREADY_SETTLED)', async () => {
    const { limiter, t, ticket } = setup(tpm());
    const granted = await ticket(500);
    await t.close();
    await limiter.close();
    await expect(granted.settle(0)).rejects.toMatchObject({ code: 'CLOSED' });
    expect(granted.settled).toBe(false);
    await expect(granted.settle(0)).rejects.toMatchObject({ code: 'CLOSED' });
    expect(granted.settled).toBe(false);
  });

  it('a store error: nothing given back, unsettled; the retry gives the permits back once', async () => {
    const { failing, remaining, ticket } = setup(tpm());
    const granted = await ticket(500);
    expect(await remaining()).toEqual([500]);
    failing.add('refund');
    await expect(granted.settle(100)).rejects.toThrow(/refund: the store is away/);
    expect(granted.settled).toBe(false);
    expect(await remaining()).toEqual([500]);
    failing.clear();
    await granted.settle(100);
    expect(granted.settled).toBe(true);
    expect(await remaining()).toEqual([900]);
    await expect(granted.settle(100)).rejects.toMatchObject({ code: 'ALREADY_SETTLED' });
    expect(await remaining()).toEqual([900]);
  });

  it('a penalty the store refused is taken by the retry, once', async () => {
    const { failing, remaining, ticket } = setup(tpm());
    const granted = await ticket(100);
    failing.add('penalize');
    await expect(granted.settle(400)).rejects.toThrow(/penalize: the store is away/);
    expect(granted.settled).toBe(false);
    expect(await remaining()).toEqual([900]);
    failing.clear();
    await granted.settle(400);
    expect(await remaining()).toEqual([600]);
  });

  it("a policy's refund fails, its penalty lands: the retry gives back the refund only (the penalty is not taken twice)", async () => {
    const { failing, calls, remaining, ticket } = setup([rpm(), tpm()]);
    const granted = await ticket({ rpm: 1, tpm: 200 });
    expect(await remaining()).toEqual([9, 800]);
    failing.add('refund');
    await expect(granted.settle({ rpm: 0, tpm: 500 })).rejects.toThrow(/refund: the store is away/);
    expect(granted.settled).toBe(false);
    expect(await remaining()).toEqual([9, 500]);
    failing.clear();
    await granted.settle({ rpm: 0, tpm: 500 });
    expect(granted.settled).toBe(true);
    expect(await remaining()).toEqual([10, 500]);
    expect(calls).toEqual({ refund: 2, penalize: 1 });
  });

  it('two settles at once apply once: the second waits for the first and is ALREADY_SETTLED', async () => {
    const { hold, calls, remaining, ticket } = setup(tpm());
    const granted = await ticket(500);
    const open = hold();
    const first = granted.settle(0);
    const second = granted.settle(100);
    const outcomes = Promise.allSettled([first, second]);
    open();
    const [a, b] = await outcomes;
    expect(a.status).toBe('fulfilled');
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'ALREADY_SETTLED' } });
    expect(calls.refund).toBe(1);
    expect(await remaining()).toEqual([1_000]);
  });

  it('two settles at once, the first fails: the second, waiting, is applied in its turn', async () => {
    const { hold, failNext, calls, remaining, ticket } = setup(tpm());
    const granted = await ticket(500);
    const open = hold();
    failNext.refund = 1;
    const first = granted.settle(0);
    const second = granted.settle(100);
    // The first is at the store (held); the second waits for it, and reaches the store only after.
    await Promise.resolve();
    expect(calls.refund).toBe(1);
    open();
    const [a, b] = await Promise.allSettled([first, second]);
    expect(a).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/the store is away/) } });
    expect(b.status).toBe('fulfilled');
    expect(granted.settled).toBe(true);
    expect(calls.refund).toBe(2);
    expect(await remaining()).toEqual([900]);
  });
});
