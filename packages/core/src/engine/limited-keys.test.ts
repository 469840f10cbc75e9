import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { ManualClock } from '../foundation/clock.js';
import { createLimiter } from './limiter.js';
import { LimitedKeys, keyHash } from './limited-keys.js';
import type { LimitedKeysBinding } from './limited-keys-board.js';
import { MemoryBoards } from './memory-boards.js';
import { memoryStore } from './memory-store.js';

/** A limiter of 10 per minute on a ManualClock, with the given limitedKeys. */
function limiterWith(limitedKeys?: Parameters<typeof createLimiter>[0]['limitedKeys']) {
  const clock = new ManualClock(0);
  return createLimiter({
    rules: fixedWindow({ limit: 10, windowMs: 60_000 }),
    store: memoryStore({ clock }),
    prefix: 'lk',
    ...(limitedKeys === undefined ? {} : { limitedKeys }),
  });
}

describe('limiter.topLimited', () => {
  it('after a skewed load: the keys denied most first, then those granted near their limit; hashed unless clearKeys', async () => {
    const limiter = limiterWith({ clearKeys: true });
    // alice: 30 calls (20 denied), bob: 15 (5 denied), carol: 9 (the last grants near the limit), dave: 2.
    for (const [key, calls] of [
      ['alice', 30],
      ['bob', 15],
      ['carol', 9],
      ['dave', 2],
    ] as const) {
      for (let i = 0; i < calls; i++) await limiter.tryAcquire(key);
    }
    const top = await limiter.topLimited(3);
    expect(top).toEqual([
      { key: 'alice', hashed: false, denied: 20, nearLimit: 2, error: 0 },
      { key: 'bob', hashed: false, denied: 5, nearLimit: 2, error: 0 },
      { key: 'carol', hashed: false, denied: 0, nearLimit: 1, error: 0 },
    ]);
    const hashed = limiterWith({ keySecret: 'shh' });
    for (let i = 0; i < 12; i++) await hashed.tryAcquire('alice@example.com', { permits: 1 });
    const [row] = await hashed.topLimited(1);
    expect(row).toMatchObject({ hashed: true, denied: 2 });
    expect(row?.key).toBe(await hashed.keyHash('alice@example.com'));
    expect(row?.key).toBe(await keyHash('alice@example.com', 'shh'));
    expect(row?.key).not.toContain('alice');
  });

  it('a shadowed would-be denial counts as denied; acquire is seen too; limitedKeys false keeps nothing', async () => {
    const shadow = createLimiter({
      rules: fixedWindow({ limit: 1, windowMs: 60_000 }),
      shadow: true,
      limitedKeys: { clearKeys: true },
    });
    for (let i = 0; i < 3; i++) await shadow.tryAcquire('k');
    expect((await shadow.topLimited())[0]).toMatchObject({ key: 'k', denied: 2 });
    const none = limiterWith(false);
    for (let i = 0; i < 20; i++) await none.tryAcquire('k');
    expect(await none.topLimited()).toEqual([]);
  });

  it('bad options and arguments are typed errors naming them', async () => {
    expect(() => limiterWith({ capacity: 0 })).toThrow(expect.objectContaining({ argument: 'limitedKeys.capacity' }));
    expect(() => limiterWith({ nearLimit: 1 })).toThrow(expect.objectContaining({ argument: 'limitedKeys.nearLimit' }));
    expect(() => limiterWith({ keySecret: '' })).toThrow(
      expect.objectContaining({ argument: 'limitedKeys.keySecret' }),
    );
    expect(() => limiterWith({ capcity: 3 } as never)).toThrow(
      expect.objectContaining({ argument: 'limitedKeys.capcity' }),
    );
    expect(() => limiterWith({ flushMs: 50 })).toThrow(expect.objectContaining({ argument: 'limitedKeys.flushMs' }));
    const limiter = limiterWith();
    await expect(limiter.topLimited(0)).rejects.toMatchObject({ argument: 'n' });
    await expect(limiter.topLimited(3, { minutes: 16 })).rejects.toMatchObject({ argument: 'minutes' });
    await expect(limiter.topLimited(3, { minutes: 1.5 })).rejects.toMatchObject({ argument: 'minutes' });
    await expect(limiter.keyHash('')).rejects.toMatchObject({ argument: 'key' });
  });
});

describe('the limited-keys board', () => {
  /** Two limiters of one prefix on one memory store (as two nodes on one Redis), on a ManualClock. */
  function twoNodes() {
    const clock = new ManualClock(0);
    const store = memoryStore({ clock });
    const node = () =>
      createLimiter({
        rules: fixedWindow({ limit: 2, windowMs: 1_000 }),
        store,
        prefix: 'fleet',
        limitedKeys: { clearKeys: true },
      });
    return { clock, a: node(), b: node() };
  }

  it("the nodes' counts add up once flushed; the minutes asked for are summed, older ones left out", async () => {
    const { clock, a, b } = twoNodes();
    // One store: the nodes share the keys' counts, as on Redis.
    for (let i = 0; i < 5; i++) await a.tryAcquire('x'); // 3 denied on a
    for (let i = 0; i < 4; i++) await b.tryAcquire('x'); // 4 denied on b
    for (let i = 0; i < 6; i++) await b.tryAcquire('y'); // 4 denied on b
    // Not flushed yet: each node sees its own.
    expect((await a.topLimited(5)).map((r) => [r.key, r.denied])).toEqual([['x', 3]]);
    await Promise.all([a.flushLimitedKeys(), b.flushLimitedKeys()]);
    expect((await a.topLimited(5)).map((r) => [r.key, r.denied])).toEqual([
      ['x', 7],
      ['y', 4],
    ]);
    // Three minutes on, in a new window: y is denied again, flushed in this minute.
    clock.advance(180_000);
    for (let i = 0; i < 5; i++) await a.tryAcquire('y');
    await a.flushLimitedKeys();
    expect((await b.topLimited(5, { minutes: 1 })).map((r) => [r.key, r.denied])).toEqual([['y', 3]]);
    // Equal denials: y was granted near its limit twice, x once.
    expect((await b.topLimited(5, { minutes: 4 })).map((r) => [r.key, r.denied, r.nearLimit])).toEqual([
      ['y', 7, 2],
      ['x', 7, 1],
    ]);
  });

  it('a flush the board refuses keeps its counts for the next one, and rejects with why', async () => {
    const board = new MemoryBoards().bind('p');
    let refuse = true;
    const refusing: LimitedKeysBinding = {
      add: (minute, rows, keep) =>
        refuse ? Promise.reject(new Error('Redis is away')) : board.add(minute, rows, keep),
      read: (from, to) => board.read(from, to),
      unbind: () => {},
    };
    const options = { capacity: 8, nearLimit: 0.2, clearKeys: true, keySecret: '', flushMs: 5_000 };
    const limited = new LimitedKeys(options, refusing, new ManualClock(0));
    const denial = { allowed: false, limit: 1, remaining: 0, retryAfterMs: 1, resetAfterMs: 1, waitMs: 0, rule: 'r' };
    for (let i = 0; i < 3; i++) limited.see('k', denial);
    await expect(limited.flush()).rejects.toThrow('Redis is away');
    expect(await limited.fleetTop(5, 1)).toEqual([{ key: 'k', denied: 3, nearLimit: 0, error: 0 }]);
    refuse = false;
    await limited.flush();
    expect(await board.read(0, 0)).toEqual([{ key: 'k', denied: 3, nearLimit: 0, error: 0 }]);
    expect(await limited.fleetTop(5, 1)).toEqual([{ key: 'k', denied: 3, nearLimit: 0, error: 0 }]);
    await limited.close();
  });

  it('each minute keeps the `keep` keys highest in each count, whatever was added', async () => {
    const board = new MemoryBoards().bind('p');
    const rows = Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, denied: i, nearLimit: 10 - i, error: 0 }));
    await board.add(7, rows, 3);
    const kept = await board.read(7, 7);
    expect(
      kept
        .filter((r) => r.denied > 0)
        .map((r) => r.key)
        .sort(),
    ).toEqual(['k7', 'k8', 'k9']);
    expect(
      kept
        .filter((r) => r.nearLimit > 0)
        .map((r) => r.key)
        .sort(),
    ).toEqual(['k0', 'k1', 'k2']);
    expect(kept).toHaveLength(6);
  });
});
