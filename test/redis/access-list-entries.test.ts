/**
 * Entries across versions and spellings on Redis, as in memory (access-list-entries.test.ts in core): `key=`
 * lists any text as a key, a stored entry this version cannot enforce is named and removable as listed (by
 * unlist and by the CLI), and one address or range spelled two ways on the two lists is denied on every node.
 */
import { type Limiter, fixedWindow } from '@sluice/core';
import { runCli } from '@sluice/cli';
import { describe, expect, it, vi } from 'vitest';
import { accessListKeys } from '../../packages/redis/src/key-layout.js';
import { withTwoLimiters } from '../harness/two-limiters.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const HEARD = { timeout: 5_000, interval: 10 };

/** Two ready limiters of one fresh prefix, each on its own client and store; closed after `body`. */
async function withTwo(body: (a: Limiter, b: Limiter, prefix: string) => Promise<void>) {
  const rules = fixedWindow({ name: 'api', limit: 3, windowMs: 60_000 });
  await withTwoLimiters({ url: testRedis().server.url, rules, stem: 'entries' }, body);
}

describe('access-list entries on Redis', () => {
  it('key= denies a key shaped like a number with dots or hex with colons, on every node', async () => {
    await withTwo(async (a, b) => {
      await expect(a.deny('12:34:56')).rejects.toMatchObject({ message: expect.stringContaining('"key=12:34:56"') });
      await a.deny(['key=12:34:56', 'key=2024.11.27']);
      for (const key of ['12:34:56', '2024.11.27'])
        await vi.waitFor(async () => expect((await b.tryAcquire(key)).access?.list).toBe('deny'), HEARD);
    });
  });

  it("an older version's entries that this one refuses are removed as listed, by unlist and by the CLI", async () => {
    await withTwo(async (a, b, prefix) => {
      const { server, redis } = testRedis();
      const [entries] = accessListKeys(prefix);
      const old = ['10.1.2.3/8', '010.0.0.1', 'fe80::1%eth0', '10.0.0.1 '];
      for (const entry of old) await redis.hset(entries, entry, 'deny\n\n');
      await a.deny('fine'); // a change, heard by b: it reads the hand-written entries too
      await vi.waitFor(async () => expect((await b.tryAcquire('fine')).allowed).toBe(false), HEARD);
      expect(await a.unlist(['10.1.2.3/8', '010.0.0.1'])).toBe(2);
      const out: string[] = [];
      const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(line), env: {} };
      const code = await runCli(['unlist', 'fe80::1%eth0', '10.0.0.1 ', '--prefix', prefix, '--url', server.url], io);
      expect([code, out]).toEqual([0, ['removed 2 of 2']]);
      expect((await b.accessList()).map((e) => e.entry)).toEqual(['fine']);
    });
  });

  it('one range spelled two ways on the two lists: the deny holds on both nodes, and after the allow goes', async () => {
    const pairs: Array<[string, string, string]> = [
      ['10.0.0.0/8', '::ffff:10.0.0.0/104', '10.1.1.1'],
      ['::ffff:10.0.0.0/104', '10.0.0.0/8', '::ffff:10.1.1.1'],
      ['2001:db8::/32', '2001:0DB8:0::/32', '2001:db8::5'],
      ['10.0.0.1', '::ffff:10.0.0.1', '10.0.0.1'],
    ];
    for (const [denied, allowed, address] of pairs) {
      await withTwo(async (a, b) => {
        await a.deny(denied);
        await a.allow(allowed);
        for (const node of [a, b])
          await vi.waitFor(
            async () =>
              expect((await node.tryAcquire('u', { address })).access).toMatchObject({ list: 'deny', entry: denied }),
            HEARD,
          );
        await a.unlist(allowed); // before: removing one spelling's entry could drop the network's other
        expect((await b.tryAcquire('u', { address })).access?.list).toBe('deny');
      });
    }
  });
});
