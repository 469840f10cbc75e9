/**
 * Live limits in leased mode: the configuration is the one exact mode keeps in Redis (see
 * test/redis/live-limits.test.ts); a lease reads its slot's version, so a node switches at its next lease
 * after another node's change, handing back what it held under the old rules and never topping it up. Two
 * nodes on one Redis, standalone and Cluster: after a change to a lower limit the fleet admits at most what
 * the new limit leaves plus what the other node held when it changed; an override and its removal alike.
 */
import type { Decision, Limiter } from '@sluice/core';
import { type LeasedStore, leasedStore } from '@sluice/hybrid';
import { describe, expect, it } from 'vitest';
import { type TwoNodes, liveBucket, liveDeployments, withTwoNodes } from '../harness/live-nodes.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();

/** `count` single-permit decisions for `key`, 8 at a time (demand enough for leases), and what they said. */
async function decide(limiter: Limiter, key: string, count: number): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < count; i += 8) {
    const batch = Array.from({ length: Math.min(8, count - i) }, () => limiter.tryAcquire(key));
    decisions.push(...(await Promise.all(batch)));
  }
  return decisions;
}

const granted = (decisions: readonly Decision[]) => decisions.filter((d) => d.allowed).length;

const deployments = liveDeployments(testRedis, testCluster);

describe.each(deployments)('leased mode on a $name server', ({ open }) => {
  /** Two leased nodes of a limiter of liveBucket(capacity). */
  const onTwoNodes = (capacity: number, body: (nodes: TwoNodes<LeasedStore>) => Promise<void>) =>
    withTwoNodes(open, (redis) => leasedStore({ redis }), liveBucket(capacity), body);

  it('a change to a lower limit: the other node switches at its next lease, and the fleet admits at most what the new limit leaves plus what it held', async () => {
    await onTwoNodes(1_000, async ({ a, b }) => {
      const before = granted(await decide(a, 'k', 100)) + granted(await decide(b, 'k', 100));
      expect(before).toBe(200);
      await a.reconfigure(liveBucket(300));
      const after = [...(await decide(b, 'k', 400)), ...(await decide(a, 'k', 400))];
      const switched = after.filter((d) => d.configVersion === 2);
      // b learned of the change at a lease (or an exact decision) that found its slot newer: from then on it
      // decides under 300, and it never held more than one lease of the old rules (at most 1,000 / 4 / 2).
      expect(switched.length).toBeGreaterThan(0);
      expect(switched.every((d) => d.limit === 300)).toBe(true);
      expect(granted(after)).toBeLessThanOrEqual(300 - before + 125);
      expect(granted(after)).toBeGreaterThan(0);
      expect([a.configVersion, b.configVersion]).toEqual([2, 2]);
    });
  });

  it("a node that has not leased since another's change resets the key under the new rules", async () => {
    await onTwoNodes(100, async ({ a, b }) => {
      expect(granted(await decide(a, 'k', 100))).toBe(100);
      await a.reconfigure(liveBucket(200));
      await b.reset('k');
      expect(b.configVersion).toBe(2);
      expect(granted(await decide(a, 'k', 300))).toBe(200);
    });
  });

  it('an override on one node holds on the other from its next lease; removed, the key returns to the limiter with what it used', async () => {
    await onTwoNodes(100, async ({ a, b }) => {
      expect(granted(await decide(a, 'acme', 60))).toBe(60);
      await a.override('acme', liveBucket(300));
      const owned = await decide(b, 'acme', 400);
      // Under the override from b's next lease: more than the 40 the limiter's 100 left, never over 300 in all.
      const byOverride = owned.filter((d) => d.override === true);
      expect(byOverride.length).toBeGreaterThan(0);
      expect(byOverride.every((d) => d.limit === 300)).toBe(true);
      expect(granted(owned)).toBeGreaterThan(40);
      expect(60 + granted(owned)).toBeLessThanOrEqual(300);
      expect((await b.overrides()).overrides.map((o) => o.key)).toEqual(['acme']);
      await b.removeOverride('acme');
      // Back to the limiter's 100 with more than 100 used: nothing more, on either node.
      const back = [...(await decide(a, 'acme', 50)), ...(await decide(b, 'acme', 50))];
      expect(granted(back)).toBe(0);
      expect(back.some((d) => d.override === true)).toBe(false);
      // Other keys never changed.
      expect(granted(await decide(b, 'other', 100))).toBe(100);
    });
  });
});
