/**
 * What an entry's text is, across versions and spellings: `key=` lists any text as a key; an entry a version
 * cannot enforce is named, never silently skipped, and removable as listed; one address or range spelled two
 * ways on the two lists is denied whatever the order or the expiry of either.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { adminRouter } from '../admin/admin-router.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { ManualClock } from '../foundation/clock.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
afterEach(() => emitted.mockClear());

function limiterOn(clock = new ManualClock(1_000_000)) {
  const store = memoryStore({ clock });
  const limiter = createLimiter({
    rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }),
    store,
    prefix: 'entries',
  });
  return { clock, store, limiter };
}

describe('access-list entries', () => {
  it('key= lists any text as a key (numbers with dots, hex with colons); plain, such text stays refused as a malformed address', async () => {
    const { limiter } = limiterOn();
    const keys = ['12:34:56', 'ab:cd:ef', '2024.11.27', '1.5', '10.0.0.1', 'key=x'];
    for (const key of keys) {
      if (key !== '10.0.0.1' && key !== 'key=x')
        await expect(limiter.deny(key), key).rejects.toMatchObject({
          name: 'SluiceRangeError',
          message: expect.stringContaining(`"key=${key}"`),
        });
    }
    await limiter.deny(keys.map((key) => `key=${key}`));
    for (const key of keys)
      expect((await limiter.tryAcquire(key)).access, key).toMatchObject({ list: 'deny', entry: `key=${key}` });
    // A key entry never meets a client address, whatever the key looks like.
    expect((await limiter.tryAcquire('other', { address: '10.0.0.1' })).access).toBeUndefined();
    expect((await limiter.accessList()).map((e) => e.entry)).toContain('key=12:34:56');
    for (const malformed of ['203.0.113.7 ', '010.0.0.1', '203.0.113.7/', '203.0.113.0/24/1', '203.0.113.0/-1', 'key='])
      await expect(limiter.allow(malformed), malformed).rejects.toMatchObject({
        name: 'SluiceRangeError',
        value: malformed,
      });
  });

  it('a stored entry this version cannot enforce is named in a warning, and unlist, the admin DELETE remove it as listed', async () => {
    const { store, limiter } = limiterOn();
    const old = ['10.1.2.3/8', '010.0.0.1', 'fe80::1%eth0', '10.0.0.1 '];
    // As an older version (or a hand) wrote them: straight into the store.
    await store.bindAccessList('entries').put(old.map((entry) => ({ entry, list: 'deny' as const })));
    await limiter.ready();
    await limiter.tryAcquire('k', { address: '10.200.0.1' });
    const warned = emitted.mock.calls.filter((c) => (c[1] as { code: string }).code === 'SLUICE_LIST_ENTRY_UNENFORCED');
    expect(warned).toHaveLength(1);
    for (const entry of old) expect(warned[0]?.[0]).toContain(JSON.stringify(entry));
    expect(await limiter.unlist(['10.1.2.3/8', '010.0.0.1'])).toBe(2);
    const token = 'Bearer 0123456789abcdef0123456789abcdef';
    const router = adminRouter({ limiters: [limiter], authorize: (r) => r.headers.get('authorization') === token });
    const res = await router.fetch(
      new Request('http://x/api/limiters/entries/lists', {
        method: 'DELETE',
        headers: { authorization: token, 'content-type': 'application/json' },
        body: JSON.stringify({ entries: ['fe80::1%eth0', '10.0.0.1 '] }),
      }),
    );
    expect([res.status, await res.json()]).toEqual([200, { removed: 2 }]);
    expect(await limiter.accessList()).toEqual([]);
  });

  it('one address or range spelled two ways on the two lists: the deny holds, whatever the order and either one expiring', async () => {
    const spellings: Array<[string, string, string]> = [
      ['10.0.0.0/8', '::ffff:10.0.0.0/104', '10.1.1.1'],
      ['2001:db8::/32', '2001:0DB8:0::/32', '2001:db8::5'],
      ['10.0.0.1', '::ffff:10.0.0.1', '10.0.0.1'],
      ['10.0.0.1', '::ffff:10.0.0.1', '::ffff:10.0.0.1'],
      ['::ffff:10.0.0.0/104', '10.0.0.0/8', '::ffff:a01:101'],
      ['key=abc', 'abc', ''],
    ];
    for (const [denied, allowed, address] of spellings) {
      for (const [a, b] of [
        [denied, allowed],
        [allowed, denied],
      ] as const) {
        const { clock, limiter } = limiterOn();
        const call = (address === '' ? ['abc', undefined] : ['u', { address }]) as [
          string,
          { address: string } | undefined,
        ];
        if (a === denied) {
          await limiter.deny(a, { ttlMs: 2_000 });
          await limiter.allow(b, { ttlMs: 1_000 });
        } else {
          await limiter.allow(a, { ttlMs: 1_000 });
          await limiter.deny(b, { ttlMs: 2_000 });
        }
        const what = `deny ${denied} + allow ${allowed}, ${address}`;
        expect((await limiter.tryAcquire(...call)).access, what).toMatchObject({ list: 'deny', entry: denied });
        clock.advance(1_500); // the allow expired: the deny still holds
        expect((await limiter.tryAcquire(...call)).access, what).toMatchObject({ list: 'deny', entry: denied });
        clock.advance(1_000); // both expired
        expect((await limiter.tryAcquire(...call)).access, what).toBeUndefined();
      }
    }
  });

  it('a client arriving as an IPv4-mapped IPv6 address meets IPv4 entries, and a mapped entry meets an IPv4 client', async () => {
    const { limiter } = limiterOn();
    await limiter.deny(['10.0.0.0/8', '::ffff:192.0.2.0/120']);
    for (const address of [
      '::ffff:10.1.1.1',
      '::ffff:a01:101',
      '0:0:0:0:0:ffff:10.1.1.1',
      '192.0.2.9',
      '::ffff:192.0.2.9',
    ])
      expect((await limiter.tryAcquire('u', { address })).allowed, address).toBe(false);
    expect((await limiter.tryAcquire('u', { address: '2001:db8::10.1.1.1' })).allowed).toBe(true);
  });
});
