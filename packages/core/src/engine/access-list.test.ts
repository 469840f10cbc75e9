import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { ManualClock } from '../foundation/clock.js';
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

  it("addresses and CIDR ranges, IPv4 and IPv6, match the call's address: the most specific range holds", async () => {
    const { a } = nodes();
    await a.deny(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7']);
    await a.allow(['10.1.0.0/16', '2001:db8:1::/48']);
    const list = async (address: string) => (await a.tryAcquire('k', { address })).access?.list;
    expect(await list('10.9.9.9')).toBe('deny');
    expect(await list('10.1.2.3')).toBe('allow');
    expect(await list('::ffff:10.9.0.1')).toBe('deny'); // IPv4-mapped: the IPv4 ranges hold
    expect(await list('2001:db8:2::1')).toBe('deny');
    expect(await list('2001:db8:1::5')).toBe('allow');
    expect(await list('192.0.2.7')).toBe('deny');
    expect(await list('192.0.2.8')).toBeUndefined();
    expect(await list('11.0.0.1')).toBeUndefined();
    await a.allow('10.9.9.9');
    expect(await list('10.9.9.9')).toBe('allow');
    // peek and acquire read the same address.
    expect((await a.peek('k', { address: '10.9.0.1' })).access?.list).toBe('deny');
    await expect(a.acquire('k', { address: '10.9.0.1' })).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
  });

  it('a key shaped like an address is a key: only the address the call gives meets address and range entries', async () => {
    const clock = new ManualClock(0);
    const limiter = createLimiter({
      rules: fixedWindow({ name: 'api', limit: 5, windowMs: 60_000 }),
      store: memoryStore({ clock }),
    });
    await limiter.allow('10.0.0.0/8');
    // An API key the client chose, as a header strategy keys it (the reproduction: 50 of 50 passed).
    for (const key of ['10.0.7.1', '::ffff:10.1.1.1', 'ip:10.0.7.1', 'ip:10.0.0.0/8']) {
      let passed = 0;
      for (let i = 0; i < 50; i++) if ((await limiter.tryAcquire(key)).allowed) passed++;
      expect(passed, key).toBe(5);
    }
    // The client's own address in the range skips the rules, whatever the key.
    expect(await allowedOf(limiter, 'user:7', 0)).toBe(0);
    for (let i = 0; i < 20; i++)
      expect((await limiter.tryAcquire('10.0.7.1', { address: '10.0.7.1' })).access?.list).toBe('allow');
  });

  it("IPv6: an address or any range matches the client's own address, not its /56", async () => {
    const { a } = nodes();
    await a.deny('2001:db8::5');
    await a.allow('2001:db8:0:1::/64');
    await a.deny('2001:db8:0:20::/60');
    // byIp keys an IPv6 client by its /56; the lists see the address the adapter read.
    const key = 'ip:2001:db8::/56';
    const said = async (address: string) => (await a.tryAcquire(key, { address })).access?.list;
    expect(await said('2001:db8::5')).toBe('deny');
    expect(await said('2001:db8::6')).toBeUndefined();
    expect(await said('2001:db8:0:1::9')).toBe('allow');
    expect(await said('2001:db8:0:3::9')).toBeUndefined(); // in the allowed /64's /56, not in the /64
    expect(await said('2001:db8:0:2f::1')).toBe('deny');
    expect(await said('2001:db8:0:30::1')).toBeUndefined(); // past the /60
  });

  it("between the key's entry and the address's, a deny wins; a key entry never meets an address", async () => {
    const { a } = nodes();
    await a.allow(['partner', '198.51.100.0/24']);
    await a.deny(['mallory', '203.0.113.7']);
    const said = async (key: string, address?: string) =>
      (await a.tryAcquire(key, address === undefined ? {} : { address })).access;
    expect(await said('partner', '203.0.113.7')).toMatchObject({ list: 'deny', entry: '203.0.113.7' });
    expect(await said('mallory', '198.51.100.1')).toMatchObject({ list: 'deny', entry: 'mallory' });
    expect(await said('partner', '198.51.100.1')).toMatchObject({ list: 'allow', entry: 'partner' });
    expect(await said('nobody', '198.51.100.1')).toMatchObject({ list: 'allow', entry: '198.51.100.0/24' });
    // A numeric key is a key (167772161 is 10.0.0.1 as ipaddr.js reads numbers).
    await a.deny('10.0.0.1');
    expect(await said('167772161')).toBeUndefined();
  });

  it('an address that is none is a typed error naming address, and takes nothing', async () => {
    const { a } = nodes();
    await a.deny('203.0.113.0/24');
    for (const address of ['nope', '010.0.0.1', '203.0.113.7/32', ' 203.0.113.7', 7]) {
      await expect(a.tryAcquire('k', { address } as never)).rejects.toMatchObject({
        name: 'SluiceRangeError',
        argument: 'address',
      });
      await expect(a.peek('k', { address } as never)).rejects.toMatchObject({ argument: 'address' });
    }
    expect((await a.peek('k')).remaining).toBe(2);
  });

  it('an entry expires after its ttl, on the clock of the store that keeps it', async () => {
    const { clock, a } = nodes();
    await a.deny('203.0.113.0/24', { ttlMs: 30_000, reason: 'incident' });
    const denied = await a.tryAcquire('ip:203.0.113.9', { address: '203.0.113.9' });
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 30_000, access: { entry: '203.0.113.0/24' } });
    expect(await a.accessList()).toEqual([
      { entry: '203.0.113.0/24', list: 'deny', expiresAt: 1_030_000, reason: 'incident' },
    ]);
    clock.advance(30_000);
    expect((await a.tryAcquire('ip:203.0.113.9', { address: '203.0.113.9' })).access).toBeUndefined();
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

  it('an unknown option of allow or deny is refused by name, and nothing is listed (a misspelt ttl was a permanent entry)', async () => {
    const { a } = nodes();
    for (const list of ['allow', 'deny'] as const) {
      const misspelt = { ttl: 5 } as unknown as { ttlMs: number };
      await expect(a[list]('x', misspelt)).rejects.toThrow(/no option "ttl".*ttlMs, reason/);
      await expect(a[list]('x', { ttlMs: Number.NaN })).rejects.toMatchObject({ argument: 'ttlMs' });
      await expect(a[list]('x', { reason: 'r'.repeat(201) })).rejects.toMatchObject({ argument: 'reason' });
    }
    expect(await a.accessList()).toEqual([]);
  });

  it('address-like entries that cannot be enforced as written are refused, a typed error naming the entry', async () => {
    const { a } = nodes();
    const refused = [
      '203.0.113.7 ',
      ' 203.0.113.7',
      '203.0.113.0 /24',
      '010.0.0.1',
      '203.0.113.7/',
      '203.0.113.0/24/1',
      '203.0.113.0/-1',
      '203.0.113.0/33',
      '2001:db8::/129',
      '10.1.2.3/8', // host bits past /8: the range is 10.0.0.0/8
      '2001:db8::5/56',
      'fe80::1%eth0', // a zone: addresses are matched without one
      '1.2.3',
      '300.1.2.3',
      '2001:db8:::1',
    ];
    for (const entry of refused) {
      for (const list of ['allow', 'deny'] as const)
        await expect(a[list](['fine', entry]), entry).rejects.toMatchObject({
          name: 'SluiceRangeError',
          argument: 'entries',
          value: entry,
          message: expect.stringContaining(JSON.stringify(entry)),
        });
    }
    await expect(a.deny('10.1.2.3/8')).rejects.toThrow(/10\.0\.0\.0\/8/);
    expect(await a.accessList()).toEqual([]);
    // Keys stay keys, addresses and ranges in their usual forms are taken.
    await a.deny(['user:10.0.0.1', 'tenant 7', '12345', 'ad:1', '2001:db8::/32', '::ffff:10.0.0.0/104', '0.0.0.0/0']);
    expect((await a.accessList()).length).toBe(7);
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
    expect(() => nodes({ addressOf: () => '10.0.0.1' } as never)).toThrow(
      expect.objectContaining({ argument: 'accessList.addressOf' }),
    );
    await expect(a.deny('k', { ttlMs: 2 ** 48 })).rejects.toMatchObject({ argument: 'ttlMs' });
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
