import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { ManualClock } from '../foundation/clock.js';
import { addressOfKey } from './access-list.js';
import { MAX_ACCESS_ENTRIES } from './access-list-store.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';
import { type ObservedDecision, observeSluice } from './observe.js';

/** Limiters of 2 per minute under one prefix on one memory store and ManualClock (two nodes' worth). */
function nodes(accessList?: Parameters<typeof createLimiter>[0]['accessList']) {
  const clock = new ManualClock(1_000_000);
  const store = memoryStore({ clock });
  const node = () =>
    createLimiter({
      rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }),
      store,
      prefix: 'lists',
      ...(accessList === undefined ? {} : { accessList }),
    });
  return { clock, a: node(), b: node() };
}

const allowedOf = async (limiter: ReturnType<typeof createLimiter>, key: string, n: number) => {
  let allowed = 0;
  for (let i = 0; i < n; i++) if ((await limiter.tryAcquire(key)).allowed) allowed++;
  return allowed;
};

describe('access lists', () => {
  it('an allowed key skips the rules and consumes nothing; a denied one is refused with its reason, on every limiter of the prefix', async () => {
    const { a, b } = nodes();
    await a.allow('partner', { reason: 'contract 7' });
    await a.deny('scraper', { reason: 'abuse ticket 12' });
    expect(await allowedOf(b, 'partner', 10)).toBe(10);
    const allowed = await b.tryAcquire('partner');
    expect(allowed).toMatchObject({
      allowed: true,
      limit: 2,
      remaining: 2,
      access: { list: 'allow', entry: 'partner' },
    });
    const denied = await b.tryAcquire('scraper');
    expect(denied).toMatchObject({
      allowed: false,
      retryAfterMs: Infinity,
      access: { list: 'deny', entry: 'scraper', reason: 'abuse ticket 12' },
    });
    await expect(b.acquire('scraper')).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
    expect(await b.peek('scraper')).toMatchObject({ allowed: false, access: { list: 'deny' } });
    // Off the lists, each key has its whole limit: nothing was consumed while listed.
    expect(await b.unlist(['partner', 'scraper', 'nobody'])).toBe(2);
    expect(await allowedOf(a, 'partner', 5)).toBe(2);
    expect(await allowedOf(a, 'scraper', 5)).toBe(2);
    expect(await a.accessList()).toEqual([]);
  });

  it('addresses and CIDR ranges, IPv4 and IPv6: the most specific entry holds, an exact key before any range', async () => {
    const { a } = nodes();
    await a.deny(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7']);
    await a.allow(['10.1.0.0/16', '2001:db8:1::/48']);
    const list = async (key: string) => (await a.tryAcquire(key)).access?.list;
    expect(await list('10.9.9.9')).toBe('deny');
    expect(await list('10.1.2.3')).toBe('allow');
    expect(await list('::ffff:10.9.0.1')).toBe('deny'); // IPv4-mapped: the IPv4 ranges hold
    expect(await list('2001:db8:2::1')).toBe('deny');
    expect(await list('2001:db8:1::5')).toBe('allow');
    expect(await list('192.0.2.7')).toBe('deny');
    expect(await list('192.0.2.8')).toBeUndefined();
    expect(await list('11.0.0.1')).toBeUndefined();
    // A numeric key is never read as an address (167772161 is 10.0.0.1 as ipaddr.js reads numbers).
    expect(await list('167772161')).toBeUndefined();
    await a.allow('10.9.9.9');
    expect(await list('10.9.9.9')).toBe('allow');
  });

  it('addressOf maps keys to addresses; an entry expires after its ttl', async () => {
    const { clock, a } = nodes({ addressOf: (key) => (key.startsWith('ip:') ? key.slice(3) : undefined) });
    await a.deny('203.0.113.0/24', { ttlMs: 30_000, reason: 'incident' });
    const denied = await a.tryAcquire('ip:203.0.113.9');
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 30_000, access: { entry: '203.0.113.0/24' } });
    expect((await a.tryAcquire('203.0.113.9')).access).toBeUndefined();
    expect(addressOfKey('ip:2001:db8:0:100::/56')).toBe('2001:db8:0:100::');
    expect(addressOfKey('ip:user-7')).toBeUndefined();
    clock.advance(30_000);
    expect((await a.tryAcquire('ip:203.0.113.9')).access).toBeUndefined();
    expect(await a.accessList()).toEqual([]);
  });

  it('observers see list decisions from the access_list source; the limited-keys sketch does not count them', async () => {
    const { a } = nodes();
    const seen: ObservedDecision[] = [];
    const stop = observeSluice({ decision: (event) => seen.push(event) });
    try {
      await a.deny('bot');
      for (let i = 0; i < 3; i++) await a.tryAcquire('bot');
    } finally {
      stop();
    }
    expect(seen.map((e) => [e.source, e.decision.allowed])).toEqual([
      ['access_list', false],
      ['access_list', false],
      ['access_list', false],
    ]);
    expect(await a.topLimited()).toEqual([]);
  });

  it('bad input is a typed error naming it, and changes nothing', async () => {
    const { a } = nodes();
    await expect(a.deny('10.0.0.0/33')).rejects.toMatchObject({ argument: 'entries', value: '10.0.0.0/33' });
    await expect(a.deny('300.1.2.3/8')).rejects.toMatchObject({ argument: 'entries' });
    await expect(a.deny(['ok', ''])).rejects.toMatchObject({ argument: 'entries' });
    await expect(a.deny([])).rejects.toMatchObject({ argument: 'entries' });
    await expect(a.allow('k', { ttlMs: -1 })).rejects.toMatchObject({ argument: 'ttlMs' });
    await expect(a.allow('k', { reason: 'x'.repeat(201) })).rejects.toMatchObject({ argument: 'reason' });
    const million = Array.from({ length: 1_000_000 }, (_, i) => `k${i}`);
    await expect(a.deny(million)).rejects.toMatchObject({ argument: 'entries', value: 1_000_000 });
    expect(await a.accessList()).toEqual([]);
    expect(await allowedOf(a, 'ok', 3)).toBe(2);
    const off = nodes(false);
    await expect(off.a.deny('k')).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    expect(() => nodes({ refreshMs: 5 })).toThrow(expect.objectContaining({ argument: 'accessList.refreshMs' }));
  });

  it(`the lists hold at most ${MAX_ACCESS_ENTRIES} entries: past them a change is refused whole`, async () => {
    const { a } = nodes();
    for (let start = 0; start < MAX_ACCESS_ENTRIES; start += 10_000)
      await a.deny(Array.from({ length: 10_000 }, (_, i) => `k${start + i}`));
    await expect(a.deny(['one more', 'and another'])).rejects.toMatchObject({ argument: 'entries' });
    expect((await a.accessList()).length).toBe(MAX_ACCESS_ENTRIES);
    // Replacing entries already there takes no room.
    await a.allow(['k1', 'k2']);
    expect((await a.tryAcquire('k1')).access?.list).toBe('allow');
  });
});
